"""make bench: what Yama's checks cost in the kernel; measures, never judges
a time. A bench kernel (qemu-x86_64.config + selftests/bench/bench.config),
an initramfs of busybox, a static yama_bench and tools/yws/bench-init, TCG
boots: with Yama, where the guest alternates the sysctls batch by batch, and
before and after it with lsm= not naming yama (no hook: variant nohook).
The guest writes its figures to the second serial port; the table
(build/bench/kernel.txt and .json) gives medians and ratios. Problems: a
missing run, a boot without END, or more RCU-walk fallbacks with Yama on
than off. The workspace's own timing is not here (hyperfine, notes/).
"""
import json
import os
import statistics
from pathlib import Path

from . import qemu
from .ws import Stage, run

SETTINGS = {"ROUNDS": 451, "N_STAT": 200, "N_LINK": 300, "N_PTRACE": 500,
            "N_PROF": 10000, "PROF_ROUNDS": 3, "DEPTHS": "1 16 256",
            # where a path walk leaves RCU mode, the walk, and Yama's hook
            "PROF_FUNCS": "try_to_unlazy* try_to_unlazy_next* legitimize_links* "
                          "legitimize_path* leave_rcu* path_lookupat* yama_inode_follow_link*"}
STAT = {"symlink": "stat() via a trailing symlink the follower owns, sticky 1777 dir",
        "symlink-dirowner": "same, link owned by the dir's owner (Yama reads the dir)",
        "midlink": "stat() via an intermediate symlink the follower owns",
        "hardlink": "link()+unlink() of another user's 0666 file"}
TIMEOUT = 1200
BOOTS = (" lsm=capability", "", " lsm=capability")  # nohook, Yama, nohook


def parse(text):
    """The guest's channel: ({(bench, variant): [ns]}, {(bench, variant,
    func): [hits]}, {info key: value}, [errors], reached END)."""
    runs, prof, info, errors, ended = {}, {}, {}, [], 0
    for line in text.replace("\r", "").splitlines():
        p = line.split()
        if p[:1] == ["R"] and len(p) == 5:
            runs.setdefault((p[2], p[3]), []).append(float(p[4]))
        elif p[:1] == ["P"] and len(p) == 6:
            prof.setdefault((p[2], p[3], p[4]), []).append(int(p[5]))
        elif p[:1] == ["I"] and len(p) > 1:
            info.setdefault(p[1], " ".join(p[2:]))
        elif p[:1] == ["E"]:
            errors.append(line[2:])
        ended += p == ["END"]
    return runs, prof, info, errors, ended


def mad_pct(xs):
    """Median absolute deviation in percent of the median: the noise."""
    m = statistics.median(xs) if len(xs) > 1 else 0
    return round(100 * statistics.median(abs(x - m) for x in xs) / m, 1) if m else None


def ratios(a, b):
    """median / median, the median of the per-batch ratios (same drift),
    and the ratio of the fastest batches (the least disturbed ones)."""
    if not a or not b:
        return {"ratio": None, "paired": None, "min": None}
    return {"ratio": round(statistics.median(a) / statistics.median(b), 3),
            "paired": round(statistics.median(x / y for x, y in zip(a, b)), 3),
            "min": round(min(a) / min(b), 3)}


def row(runs, bench, variants, problems):
    vals = {v: runs.get((bench, v), []) for v in variants}
    problems += ["no run of %s with variant %s" % (bench, v) for v, x in vals.items() if not x]
    base = variants[1]
    return {"bench": bench, "rounds": min(map(len, vals.values())),
            "median_ns": {v: statistics.median(x) if x else None for v, x in vals.items()},
            "mad_pct": mad_pct(vals[base]),
            **{"%s/%s" % (v, w): ratios(x, vals[w])  # against off (scope0), and nohook
               for w in variants[1::2] for v, x in vals.items() if v != w}}


def rcu_walk(prof, info, problems):
    """Profiler hits per round, Yama on | off; leave-RCU functions must not
    be hit more often with it on (the hook itself runs either way)."""
    wanted, rows = set(info.get("filter", "").split()), []
    for b in ("symlink", "symlink-dirowner", "midlink"):
        fns = sorted({f for bb, _, f in prof if bb == b and (not wanted or f in wanted)} | wanted)
        n = max([len(v) for (bb, _, _), v in prof.items() if bb == b] or [0])
        for f in fns:
            on, off = (prof.get((b, v, f)) or [0] * n for v in ("yama", "off"))
            rows.append({"bench": b, "function": f, "yama_on": on, "yama_off": off})
            if on != off and not f.startswith("yama_"):
                problems.append("RCU-walk: %s hit %s with Yama on, %s off (%s)" % (f, on, off, b))
    if not rows:
        problems.append("no profiler counts (function profiler missing?)")
    return rows


def report(text, machine, boots=1):
    """(the table's lines, the JSON record) of the bench boots' channels."""
    runs, prof, info, errors, ended = parse(text)
    problems = errors + ([] if ended >= boots else ["a bench boot did not reach END (see console.log)"])
    stat = [row(runs, b, ["yama", "off", "vfs", "nohook"], problems) for b in STAT]
    depths = sorted({int(b[12:]) for b, _ in runs if b.startswith("ptrace-depth")})
    ptrace = [row(runs, "ptrace-depth%d" % d, ["scope1", "scope0"], problems) for d in depths]
    prof_rows = rcu_walk(prof, info, problems)
    f = lambda x, d=1: "-" if x is None else "%.*f" % (d, x)
    lines = ["Kernel %s in qemu-system-x86_64 (TCG, 1 vCPU), host %s; %s"
             % (info.get("kernel", "?"), machine, info.get("N", "")),
             "median ns/op of alternating batches; yama = Yama's sysctls 1 + fs.protected_* 0,"
             " off = all 0, vfs = fs.protected_* 1, nohook = boots with lsm= without yama;"
             " paired = median of per-batch ratios, min = ratio of the fastest batches,"
             " mad% = noise of the base variant",
             "%-17s%5s%9s%9s%9s%9s%9s%7s%7s%9s%7s%9s%7s%9s%7s%6s" % (
                 "bench", "rnd", "yama", "off", "vfs", "nohook", "yama/off", "paired", "min",
                 "vfs/off", "min", "off/nh", "min", "yama/nh", "min", "mad%")]
    for r in stat:
        m, y, v = r["median_ns"], r["yama/off"], r["vfs/off"]
        lines.append("%-17s%5d%9s%9s%9s%9s%9s%7s%7s%9s%7s%9s%7s%9s%7s%6s" % (
            r["bench"], r["rounds"], f(m["yama"]), f(m["off"]), f(m["vfs"]), f(m["nohook"]),
            f(y["ratio"], 3), f(y["paired"], 3), f(y["min"], 3), f(v["ratio"], 3), f(v["min"], 3),
            *(f(r[k][s], 3) for k in ("off/nohook", "yama/nohook") for s in ("ratio", "min")),
            f(r["mad_pct"])))
    lines.append("ptrace attach check: open()+close() of /proc/PID/mem of a descendant, scope 1 vs 0")
    for r in ptrace:
        m, s = r["median_ns"], r["scope1/scope0"]
        lines.append("%-17s%5d%9s%9s%9s%7s%7s%6s" % (
            r["bench"], r["rounds"], f(m["scope1"]), f(m["scope0"]), f(s["ratio"], 3),
            f(s["paired"], 3), f(s["min"], 3), f(r["mad_pct"])))
    lines.append("RCU-walk: profiler hits per round, Yama on | off")
    lines += ["  %-17s%-28s%16s | %-16s %s" % (r["bench"], r["function"], ",".join(map(str, r["yama_on"])),
              ",".join(map(str, r["yama_off"])), "equal" if r["yama_on"] == r["yama_off"] else "DIFFER")
              for r in prof_rows]
    lines += ["PROBLEM: " + p for p in problems]
    return lines, {"machine": machine, "info": info, "stat": stat, "ptrace": ptrace,
                   "rcu_walk": prof_rows, "problems": problems}


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    return "%s x%d, load %s" % (cpu, os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3]))


def tsc_khz():
    """TCG's TSC is the host's; a busy host fails the guest's calibration."""
    mhz = next((l.split(":")[1] for l in open("/proc/cpuinfo") if l.startswith("cpu MHz")), None)
    return " tsc_early_khz=%d tsc=reliable" % (float(mhz) * 1000) if mhz else ""


def main(ws, args):
    with Stage(ws, "bench") as st:
        out, cfg, src = ws.dir("bench"), ws.root / "selftests/config", ws.root / "selftests/bench"
        kdir = out / "kernel"
        with qemu.locked(kdir):
            qemu.merge_config(ws, ws.tree, kdir, [cfg / "qemu-x86_64.config", src / "bench.config"])
            qemu.kmake(ws, ws.tree, kdir, "bzImage", log=kdir / "build.log", label="bench kernel")
        run(["gcc", "-static", "-O2", "-Wall", "-o", out / "yama_bench", src / "yama_bench.c"],
            label="yama_bench")
        conf = out / "bench.conf"
        conf.write_text("".join('%s="%s"\n' % kv for kv in SETTINGS.items()))
        initrd = qemu.initramfs(kdir, out / "initramfs.cpio", Path(__file__).with_name("bench-init"),
                                files={"/bin/yama_bench": out / "yama_bench", "/bench.conf": conf})
        st.progress("booting the bench kernel %d times (%d batches per variant)"
                    % (len(BOOTS), SETTINGS["ROUNDS"]))
        boots = [qemu.boot(kdir / "arch/x86/boot/bzImage", initrd, "loglevel=4" + tsc_khz() + lsm,
                           out / ("boot%d" % i), timeout=TIMEOUT, label="bench boot%d%s" % (i, lsm))
                 for i, lsm in enumerate(BOOTS)]
        lines, rec = report("".join(b.ktap for b in boots), machine(), len(boots))
        rec["problems"] += [b.problem for b in boots if b.problem]
        (out / "kernel.txt").write_text("\n".join(lines) + "\n")
        (out / "kernel.json").write_text(json.dumps(rec, indent=1))
        print("\n".join(lines))
        st.passed = sum(r["rounds"] > 0 for r in rec["stat"] + rec["ptrace"])
        st.failed = len(rec["problems"])
        st.details = {"table": str(out / "kernel.txt"),
                      "failed_cases": [{"name": "bench", "reason": p} for p in rec["problems"]]}
        st.summary = "table in %s" % (out / "kernel.txt")
    return st.exit_code


COMMANDS = {"bench": ("time Yama's checks in a QEMU bench kernel (figures, no verdict on a time)",
                      None, main)}
