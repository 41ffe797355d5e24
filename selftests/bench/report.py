#!/usr/bin/python3
"""Tables of make bench, from what the bench boot and the workspace runs wrote.

  report.py kernel RESULTS.txt OUT_PREFIX MACHINE.json
      parse the bench boot's result channel (lines of selftests/bench/init),
      write OUT_PREFIX.txt and OUT_PREFIX.json, print the table; exit 1 when
      a run is missing or the RCU-walk fallback counts differ.
  report.py figures BENCH_DIR DEST.md
      both tables and the machine as a README section.
  report.py workspace BENCH_DIR OUT_PREFIX
      the make check stage times of the recorded runs (check-*.tsv) and the
      edit loop (loop.tsv), as OUT_PREFIX.txt/.json; print the table.

Only medians are reported (the machines are shared and noisy); no time is
ever compared against a limit here.
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STAT_BENCHES = ["symlink", "symlink-dirowner", "midlink", "hardlink"]
DESCR = {
    "symlink": "stat() via a trailing symlink the follower owns, sticky 1777 dir",
    "symlink-dirowner": "same, link owned by the dir's owner (Yama reads the dir)",
    "midlink": "stat() via an intermediate symlink the follower owns",
    "hardlink": "link()+unlink() of another user's 0666 file",
}


def median(xs):
    return statistics.median(xs) if xs else None


def mad_pct(xs):
    """Median absolute deviation, in percent of the median."""
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    return 100.0 * statistics.median(abs(x - m) for x in xs) / m if m else None


def paired(a, b):
    """Median of the per-round ratios a[i]/b[i] (same round, same drift)."""
    rs = [x / y for x, y in zip(a, b) if y]
    return round(statistics.median(rs), 3) if rs else None


def low(xs):
    """The fastest batch: the one a busy host disturbed least. The times of
    a busy host are bimodal (batches preempted or not), so a quantile may
    still fall among the preempted ones; noise never makes a batch faster."""
    return min(xs) if xs else None


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def per_variant(stat, vals):
    return {v: stat(x) for v, x in vals.items()}


def table(rows, cols):
    """A header and one line per benchmark row: its name, N and rounds,
    then one column per (header, width, value of a row)."""
    lines = [f"{'bench':<17}{'N':>6}{'rnd':>5}" + "".join(f"{h:>{w}}" for h, w, _ in cols)]
    for r in rows:
        lines.append(f"{r['bench']:<17}{r['n']:>6}{r['rounds']:>5}" +
                     "".join(f"{get(r):>{w}}" for _, w, get in cols))
    return lines


def parse_channel(path):
    runs, prof, info, errors, ended = {}, {}, [], [], False
    with open(path, errors="replace") as f:
        for raw in f:
            line = raw.strip().replace("\r", "")
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "R" and len(parts) == 5:
                _, rnd, bench, variant, ns = parts
                try:
                    runs.setdefault((bench, variant), []).append(float(ns))
                except ValueError:
                    errors.append(line)
            elif parts[0] == "P" and len(parts) == 6:
                _, rnd, bench, variant, fn, hits = parts
                prof.setdefault((bench, variant, fn), []).append(int(hits))
            elif parts[0] == "I":
                info.append(line[2:])
            elif parts[0] == "E":
                errors.append(line[2:])
            elif parts[0] == "END":
                ended = True
    return runs, prof, info, errors, ended


def lines_of(path):
    """The lines of a file without their newline; none when it is missing."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.rstrip("\n") for line in f]


def read(path):
    """A file's text, None when it is missing."""
    if os.path.exists(path):
        with open(path) as f:
            return f.read()
    return None


def keyvals(items):
    """{key: value} of "key=value" strings (the last one wins)."""
    return dict(i.partition("=")[::2] for i in items)


def write(prefix, out, lines):
    """PREFIX.json, PREFIX.txt, and the table on stdout."""
    text = "\n".join(lines) + "\n"
    with open(prefix + ".json", "w") as f:
        json.dump(out, f, indent=1)
    with open(prefix + ".txt", "w") as f:
        f.write(text)
    sys.stdout.write(text)


def info_value(info, key):
    for i in info:
        if i.startswith(key + " "):
            return i[len(key) + 1:]
    return None


def kernel(channel, prefix, machine_path):
    runs, prof, info, errors, ended = parse_channel(channel)
    m = json.loads(read(machine_path) or "{}")   # the machine
    ns = keyvals((info_value(info, "N") or "").split())   # ops per batch
    problems = list(errors)
    if not ended:
        problems.append("the bench boot did not reach END (timeout or crash: see console.log)")

    rows = []
    for b in STAT_BENCHES:
        vals = {v: runs.get((b, v), []) for v in ("yama", "off", "vfs")}
        med = per_variant(median, vals)
        problems += [f"no run of {b} with variant {v}" for v, x in vals.items() if not x]
        rows.append({
            "bench": b, "what": DESCR[b],
            "n": int(ns.get("hardlink" if b == "hardlink" else "stat", 0) or 0),
            "rounds": min(len(x) for x in vals.values()),
            "median_ns": med,
            "mad_pct": per_variant(mad_pct, vals),
            "min_ns": per_variant(low, vals),
            "min_yama/off": ratio(low(vals["yama"]), low(vals["off"])),
            "min_vfs/off": ratio(low(vals["vfs"]), low(vals["off"])),
            "paired_yama/off": paired(vals["yama"], vals["off"]),
            "yama/off": ratio(med["yama"], med["off"]),
            "vfs/off": ratio(med["vfs"], med["off"]),
            "yama/vfs": ratio(med["yama"], med["vfs"]),
        })
    depths = sorted({int(b.split("depth")[1]) for b, _ in runs if b.startswith("ptrace-depth")})
    prows = []
    for d in depths:
        b = f"ptrace-depth{d}"
        vals = {v: runs.get((b, v), []) for v in ("scope1", "scope0")}
        s1, s0 = vals.values()
        if not s1 or not s0:
            problems.append(f"no run of {b} at scope 1 or 0")
        prows.append({
            "bench": b, "depth": d, "n": int(ns.get("ptrace", 0) or 0),
            "rounds": min(len(s1), len(s0)),
            "median_ns": per_variant(median, vals),
            "mad_pct": per_variant(mad_pct, vals),
            "min_ns": per_variant(low, vals),
            "min_scope1/scope0": ratio(low(s1), low(s0)),
            "paired_scope1/scope0": paired(s1, s0),
            "scope1/scope0": ratio(median(s1), median(s0)),
        })
    # Profiler: per bench and function, the hits of each round, Yama on/off.
    # Without the graph tracer the profiler ignores set_ftrace_filter and
    # counts every function: keep the ones of the filter the guest set.
    wanted = set((info_value(info, "filter") or "").split())
    prof_rows = []
    for b in ("symlink", "symlink-dirowner", "midlink"):
        fns = sorted({fn for (bb, _, fn) in prof if bb == b
                      and (not wanted or fn in wanted)} | wanted)
        rounds = max([len(v) for (bb, _, _), v in prof.items() if bb == b] or [0])
        for fn in fns:
            # A function of the filter with no hit in a round was not listed.
            on = prof.get((b, "yama", fn), []) or [0] * rounds
            off = prof.get((b, "off", fn), []) or [0] * rounds
            equal = on == off
            prof_rows.append({"bench": b, "function": fn, "yama_on": on,
                              "yama_off": off, "equal": equal})
            # The hook runs whatever the sysctl; leave-RCU functions must
            # not be hit more often with the restriction on.
            if not equal and not fn.startswith("yama_"):
                problems.append(f"RCU-walk: {fn} hit {on} times with Yama on, "
                                f"{off} with Yama off ({b})")
    if not prof_rows:
        problems.append("no profiler counts (function profiler missing?)")

    lines = [f"Kernel side: one boot of {info_value(info, 'kernel') or '?'} in "
             f"qemu-system-x86_64 {m.get('qemu', '?')} ({m.get('accel', '?')}, 1 vCPU), "
             f"host {m.get('cpu', '?')} x{m.get('cores', '?')}, load {m.get('load', '?')}",
             "median ns/op; rnd batches of N ops per variant, the variants alternating"
             " batch by batch in one process",
             "(yama = kernel.yama.protected_* 1 + fs.protected_* 0, off = all 0,"
             " vfs = fs.protected_* 1 + Yama's 0)",
             "(paired = median of the per-batch ratios; min = ratio of the fastest"
             " batches, the ones the host disturbed least;",
             " mad% = median absolute deviation of the off batches: the noise)"]

    def med(key):
        return lambda r: fmt(r["median_ns"][key])

    def rat(key, digits=3):
        return lambda r: fmt(r[key], digits)

    def mad(key):
        return lambda r: fmt(r["mad_pct"][key], 1)

    lines += table(rows, [("yama", 9, med("yama")), ("off", 9, med("off")),
                          ("vfs", 9, med("vfs")), ("yama/off", 9, rat("yama/off")),
                          ("paired", 7, rat("paired_yama/off")),
                          ("min", 7, rat("min_yama/off")), ("vfs/off", 8, rat("vfs/off")),
                          ("min", 7, rat("min_vfs/off")), ("mad%", 6, mad("off"))])
    lines.append("ptrace attach-mode check: open()+close() of /proc/PID/mem of a descendant")
    lines += table(prows, [("scope1", 9, med("scope1")), ("scope0", 9, med("scope0")),
                           ("1/0", 9, rat("scope1/scope0")),
                           ("paired", 7, rat("paired_scope1/scope0")),
                           ("min", 7, rat("min_scope1/scope0")), ("mad%", 6, mad("scope0"))])
    lines.append(f"RCU-walk: function profiler hits over one run of N={ns.get('prof', '?')} "
                 "stat() calls (+1 untimed, + the exec), per round, Yama on | off")
    for r in prof_rows:
        mark = "equal" if r["equal"] else "DIFFER"
        lines.append(f"  {r['bench']:<17}{r['function']:<28}"
                     f"{','.join(map(str, r['yama_on'])):>16} | "
                     f"{','.join(map(str, r['yama_off'])):<16} {mark}")
    lines += ["PROBLEM: " + p for p in problems]
    write(prefix, {"machine": m, "info": info, "n": ns, "stat": rows, "ptrace": prows,
                   "rcu_walk": prof_rows, "problems": problems}, lines)
    return 1 if problems else 0


def read_tsv(path):
    rows = []
    for line in lines_of(path):
        p = line.split("\t")
        if len(p) >= 5 and not line.startswith("#"):
            rows.append({"stage": p[0], "verdict": p[1], "passed": p[2],
                         "failed": p[3], "seconds": int(p[4])})
    return rows


# The loops of issue 15 and their targets (seconds, 2 cores): the
# loops.tsv rows (measured now, before and after side by side) and the
# recorded make check runs (records/check-LABEL.tsv, tools/bench
# --record-check LABEL: cold and warm, each "-before" for the baseline).
LOOP_TARGETS = {"kunit": ("uncommitted edit -> make kunit verdict", 15),
                "selftests": ("uncommitted edit -> make selftests verdict, all boots", 45),
                "check": ("warm make check, nothing changed", 120)}
RECORD_TARGETS = {"cold": ("cold make check, fresh clone, empty ccache", 25 * 60),
                  "make-cold": ("cold make (the posting, checked), fresh clone", 12 * 60),
                  "warm": ("warm make check, nothing changed (recorded)", 120)}


def read_loops(path):
    rows = []
    for line in lines_of(path):
        p = line.split("\t")
        if len(p) >= 6:
            rows.append({"loop": p[0], "side": p[1], "run": int(p[2]),
                         "seconds": float(p[3]), "verdict": p[4], "load": p[5]})
    return rows


def secs(x):
    return "-" if x is None else ("%.0f" % x if x >= 100 else "%.1f" % x)


def goal(target, met):
    return "%d %s" % (target, "met" if met else "MISSED")


ROW = "%-52s %7s %7s %6s %4s %7s  %s"


def workspace(bench_dir, prefix):
    records_dir = os.environ.get("BENCH_RECORDS") or os.path.join(HERE, "records")
    loops = read_loops(os.path.join(bench_dir, "loops.tsv"))
    out = {"loops": {}, "records": {}}
    try:
        with open(os.path.join(bench_dir, "loops.before")) as f:
            before = "commit " + f.read().strip()
    except OSError:
        before = "the workspace before the speed work"
    lines = ["Workspace side: the loops users wait for (2 shared cores), seconds.",
             "Medians of the timed runs (a warm-up run of each side first is not",
             "counted); before = %s," % before,
             "after = now, run alternately in one make bench; ratio = after / before.",
             ROW % ("loop", "before", "after", "ratio", "runs", "target", "load")]
    for loop, (what, target) in LOOP_TARGETS.items():
        rows = [r for r in loops if r["loop"] == loop and r["run"] > 0]
        if not rows:
            continue
        bef = median([r["seconds"] for r in rows if r["side"] == "before"])
        aft = median([r["seconds"] for r in rows if r["side"] == "after"])
        ratio = aft / bef if bef and aft is not None else None
        bad = [r for r in rows if "(exit 0)" not in r["verdict"]]
        runs = min(sum(r["side"] == s for r in rows) for s in ("before", "after"))
        # a loop whose runs failed meets no target
        met = aft is not None and aft <= target and not bad
        loads = sorted((r["load"] for r in rows), key=float)
        lines.append(ROW % (what, secs(bef), secs(aft), fmt(ratio, 2), runs,
                            goal(target, met), "%s-%s" % (loads[0], loads[-1])))
        lines += ["    FAILED RUN: %s %s run %d: %s" % (loop, r["side"], r["run"], r["verdict"])
                  for r in bad]
        out["loops"][loop] = {"what": what, "before": bef, "after": aft, "ratio": ratio,
                              "runs": runs, "target": target, "met": met,
                              "failed_runs": len(bad), "rows": rows}
    for label, (what, target) in RECORD_TARGETS.items():
        recs = {}
        for side, suffix in (("before", "-before"), ("after", "")):
            pth = os.path.join(records_dir, "check-%s%s.tsv" % (label, suffix))
            if os.path.exists(pth):
                recs[side] = {"stages": read_tsv(pth),
                              "meta": keyvals(lines_of(pth[:-4] + ".meta"))}
        if not recs:
            continue
        wall = {s: int(r["meta"].get("wall") or sum(x["seconds"] for x in r["stages"]))
                for s, r in recs.items()}
        ratio = wall["after"] / wall["before"] if len(wall) == 2 else None
        met = "after" in wall and wall["after"] <= target
        when = "; ".join("%s: %s, load %s" % (s, r["meta"].get("when", "?"),
                                               r["meta"].get("load", "?"))
                         for s, r in recs.items())
        lines.append(ROW % (what, wall.get("before", "-"), wall.get("after", "-"),
                            fmt(ratio, 2), "1",
                            goal(target, met) if "after" in wall else "%d" % target, when))
        for s, r in recs.items():
            lines.append("    %s: %s" % (s, ", ".join("%s %ds" % (x["stage"], x["seconds"])
                                                    for x in r["stages"])))
            if r["meta"].get("how"):
                lines.append("      (%s)" % r["meta"]["how"])
        out["records"][label] = {"what": what, "wall": wall, "ratio": ratio,
                                 "target": target, "met": met,
                                 "stages": {s: r["stages"] for s, r in recs.items()},
                                 "meta": {s: r["meta"] for s, r in recs.items()}}
    if len(lines) == 5:
        lines.append("  (nothing measured: make bench, BENCH_LOOPS=..., or "
                     "tools/bench --record-check LABEL)")
    write(prefix, out, lines)
    return 0


def figures(bench_dir, dest):
    """README-figures.md: both tables and the machine, for README.md."""
    parts = ["## Figures", ""]
    kj = read(os.path.join(bench_dir, "kernel.json"))
    if kj is not None:
        m = json.loads(kj).get("machine", {})
        parts.append(f"From `make bench` on {m.get('cpu', '?')} x{m.get('cores', '?')} "
                     f"(host kernel {m.get('host_kernel', '?')}, load {m.get('load', '?')}), "
                     f"qemu-system-x86_64 {m.get('qemu', '?')} {m.get('accel', '?')}, one boot. "
                     "Medians of alternating batches; noisy shared machine, so read "
                     "ratios within the mad% column as equal.")
        parts.append("")
    for name in ("kernel", "workspace"):
        text = read(os.path.join(bench_dir, name + ".txt"))
        if text is not None:
            parts += ["```", text.rstrip("\n"), "```", ""]
    notes = read(os.path.join(HERE, "NOTES.md"))
    if notes is not None:
        parts += [notes.rstrip("\n"), ""]
    with open(dest, "w") as f:
        f.write("\n".join(parts))
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "figures":
        return figures(argv[2], argv[3])
    if len(argv) == 5 and argv[1] == "kernel":
        return kernel(argv[2], argv[3], argv[4])
    if len(argv) == 4 and argv[1] == "workspace":
        return workspace(argv[2], argv[3])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
