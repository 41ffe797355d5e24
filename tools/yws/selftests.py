"""make selftests and make vfs-diff: the Yama kselftests in QEMU.

The kernel is the minimal QEMU config plus the target's own config
(qemu.build_kernel); the tests are built and installed the upstream way,
make -C tools/testing/selftests TARGETS=yama install, and run by the
kernel's run_kselftest.sh from selftests/init, one boot per scenario of
selftests/scenarios ("name|kernel command line|checks|fragments merged
after the target's config", one kernel per fragment list). The KTAP of the
result channel becomes counts, a skip a skip with its reason.
"""
import fnmatch
import os
import re
import shutil
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import qemu, splats
from .ws import Stage, StageError, run

PROGRAM = re.compile(r"^# selftests: (\S+): (\S+)$")
TOP_RESULT = re.compile(r"^(not ok|ok) \d+ selftests: \S+: (\S+)(.*)$")
NESTED_RUN = re.compile(r"^# #\s+RUN\s+(\S+) \.\.\.$")
NESTED_RESULT = re.compile(r"^# (not ok|ok) (\d+)(?: ([^#].*?))?"
                           r"(?:\s*# (SKIP|XFAIL|TODO)\b ?(.*))?$")
COUNTS = re.compile(r"^# # ([\w.]+): ((?:\w+=\S+ ?)+)$")
END = "# yama-selftests: end"     # selftests/init's last line


def parse_ktap(text):
    """run_kselftest.sh's nested KTAP -> (plan, programs, cases, plans).
    kselftest_harness.h names a skipped case only in its "#  RUN" line."""
    plan, programs, cases, plans = None, [], [], {}
    current = run_name = None
    for line in (l.rstrip("\r") for l in text.splitlines()):
        if m := re.match(r"^1\.\.(\d+)$", line):     # one plan per collection
            plan = (plan or 0) + int(m.group(1))
        elif m := PROGRAM.match(line):
            current, run_name = m.group(2), None
        elif m := TOP_RESULT.match(line):
            result = ("fail" if m.group(1) == "not ok" else
                      "skip" if "# SKIP" in m.group(3) else "pass")
            programs.append({"name": m.group(2), "result": result,
                             "detail": m.group(3).strip(" #")})
            current = None
        elif current is None:
            continue
        elif m := re.match(r"^# 1\.\.(\d+)$", line):
            plans[current] = int(m.group(1))
        elif m := NESTED_RUN.match(line):
            run_name = m.group(1)
        elif m := NESTED_RESULT.match(line):
            result = ("skip" if m.group(4) == "SKIP" else
                      "fail" if m.group(1) == "not ok" else "pass")
            cases.append({"program": current, "result": result,
                          "name": m.group(3) or run_name or "case" + m.group(2),
                          "reason": m.group(5) or ""})
            run_name = None
    if current is not None:
        programs.append({"name": current, "result": "fail",
                         "detail": "started, no result (hung or cut off)"})
    return plan, programs, cases, plans


def parse_counts(text):
    """{name: {key: value}} from the programs' "# NAME: k=v ..." lines."""
    def number(v):
        return int(v) if v.isdigit() else float(v) if re.fullmatch(
            r"[\d.]+", v) and v.count(".") == 1 else v
    return {m.group(1): {k: number(v) for k, _, v in
                         (p.partition("=") for p in m.group(2).split())}
            for m in map(COUNTS.match, text.splitlines()) if m}


def judge(name, boot, checks, programs):
    """One boot's result: counts, cases, and the problems that fail it
    beyond its failed cases (CHECKS: the scenario's words)."""
    plan, progs, cases, plans = parse_ktap(boot.ktap)
    problems = [boot.problem] if boot.problem else []
    if plan is None:
        problems.append("no KTAP plan on the result channel (boot failed?)")
    elif len(progs) != plan or plan != programs:
        problems.append("%d of %d programs reported, %d expected"
                        % (len(progs), plan, programs))
    problems += [l for l in boot.ktap.splitlines() if l.startswith("Bail out!")]
    if END not in boot.ktap:
        problems.append("the run did not reach its end")
    for p in progs:
        mine = [c["result"] for c in cases if c["program"] == p["name"]]
        if p["name"] in plans and len(mine) != plans[p["name"]]:
            problems.append("%s: %d of %d cases reported"
                            % (p["name"], len(mine), plans[p["name"]]))
        if p["result"] == "fail" and "fail" not in mine:
            problems.append("%s failed: %s" % (p["name"], p["detail"]))
        if p["result"] == "skip" and not mine:     # the whole program skipped
            cases.append({"program": p["name"], "name": p["name"], "result": "skip",
                          "reason": p["detail"]})
    problems += [f["reason"] for f in splats.failures(boot.console, name)]
    words = iter(checks.split())
    for flag in words:
        if flag == "--all-skip":
            problems += ["%s: %s without Yama (must skip)" % (c["name"], c["result"])
                         for c in cases if c["result"] != "skip"]
            continue
        arg = next(words)
        found = re.search(arg, boot.console, re.M)
        if flag == "--console-must" and not found:
            problems.append("console lacks /%s/" % arg)
        elif flag == "--console-must-not" and found:
            problems.append("console has /%s/: %s" % (arg, found.group(0)))
        elif flag in ("--must-pass", "--must-skip"):
            matched = [c for c in cases if fnmatch.fnmatch(c["name"], arg)]
            problems += ["%s: %s, must %s here %s" % (c["name"], c["result"], flag[7:],
                         c["reason"]) for c in matched if c["result"] != flag[7:]]
            if not matched:
                problems.append("no case matches %s" % arg)
    counts = {k: sum(c["result"] == k for c in cases) for k in ("pass", "fail", "skip")}
    return {**counts, "seconds": round(boot.seconds), "problems": problems,
            "cases": cases, "counts": parse_counts(boot.ktap)}


def scenarios(path, only=()):
    """[(name, cmdline, checks, fragments)] of a scenario file, those named in ONLY."""
    rows = [(l.split("|") + ["", "", ""])[:4] for l in Path(path).read_text().splitlines()
            if l.strip() and not l.startswith("#")]
    rows = [r for r in rows if not only or r[0] in only]
    if not rows:
        raise StageError("no scenario %s in %s" % (" ".join(only), path))
    return rows


def add_program(inst, collection, program):
    """PROGRAM joins the runner's list as COLLECTION:name."""
    (inst / collection).mkdir(exist_ok=True)
    shutil.copy(program, inst / collection)
    (inst / collection / "settings").write_text("timeout=600\n")
    with open(inst / "kselftest-list.txt", "a") as f:
        f.write("%s:%s\n" % (collection, Path(program).name))


def prepare(ws, src, kdir, bindir, extra_programs=()):
    """The kselftest install (+ the differential test, + EXTRA_PROGRAMS in
    collection "stress", run before yama) and the initramfs. Returns
    (initramfs, number of programs of the default run)."""
    bindir = Path(bindir)
    bindir.mkdir(parents=True, exist_ok=True)
    inst, log = bindir / "kselftest", bindir / "tests.log"
    shutil.rmtree(inst, ignore_errors=True)
    log.write_text("")
    qemu.kmake(ws, src, kdir, "headers", log=log)   # the tests' uapi: KHDR_INCLUDES
    run(["make", "-C", Path(src) / "tools/testing/selftests", "O=%s" % kdir,
         "TARGETS=yama", "KSFT_INSTALL_PATH=%s" % inst, "USERLDFLAGS=-static",
         "install"], env=qemu.make_env(ws), log=log, label="kselftest install")
    warnings = [l for l in log.read_text().splitlines() if "warning:" in l]
    if warnings:
        raise StageError("the selftests build with warnings: %s" % warnings[0])
    for p in extra_programs:
        add_program(inst, "stress", p)
    vfs = bindir / "yama_vfs_diff"
    run(["gcc", "-static", "-O2", "-Wall", "-Werror", "-isystem",
         Path(kdir) / "usr/include", "-o", vfs,
         ws.root / "selftests/vfs-diff/yama_vfs_diff.c"], log=log, label="gcc yama_vfs_diff")
    add_program(inst, "vfs-diff", vfs)
    listed = (inst / "kselftest-list.txt").read_text().split()
    if not any(l.startswith("yama:") for l in listed):
        raise StageError("make install listed no yama program")
    sel = ws.root / "selftests"
    cpio = qemu.initramfs(kdir, bindir / "initramfs.cpio", sel / "init",
                          files={"/usr/bin/timeout": sel / "timeout"},
                          trees={"/kselftest": inst})
    return cpio, sum(not l.startswith("vfs-diff:") for l in listed)


def boots(kernel, initrd, rows, outdir, programs, *, timeout=900, smp=1):
    """Boot every scenario of ROWS (side by side, one per CPU) and judge it:
    {name: result}."""
    def one(row):
        name, cmdline, checks = row[:3]
        m = re.search(r"selftests\.only=(\S+)", cmdline)
        b = qemu.boot(kernel, initrd, cmdline, Path(outdir) / name,
                      timeout=timeout, smp=smp, label="boot " + name)
        r = judge(name, b, checks, len(m.group(1).split(",")) if m else programs)
        r["cmdline"] = cmdline
        print("  boot %s: %d passed, %d failed, %d skipped in %ds%s" % (
            name, r["pass"], r["fail"], r["skip"], b.seconds,
            "".join("\n    FAIL " + p for p in r["problems"])), flush=True)
        return name, r
    pool = ThreadPoolExecutor(os.cpu_count())
    old = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return dict(pool.map(one, rows))
    except BaseException:    # interrupted: no QEMU outlives the stage
        qemu.stop_all()
        raise
    finally:
        pool.shutdown()
        signal.signal(signal.SIGTERM, old)


def publish(st, results):
    """Stage ST's counts and details from the boots' RESULTS."""
    st.details = {"scenarios": {}, "failed_cases": [], "skipped_cases": []}
    for name, r in results.items():
        st.passed += r["pass"]
        st.skipped += r["skip"]
        st.failed += r["fail"] + len(r["problems"])
        st.details["scenarios"][name] = {k: r[k] for k in
                                         ("pass", "fail", "skip", "seconds", "counts", "cmdline") if k in r}
        for c in r["cases"]:
            if c["result"] != "pass":
                st.details["failed_cases" if c["result"] == "fail" else "skipped_cases"].append(
                    {"name": "%s/%s/%s" % (name, c["program"], c["name"]),
                     "reason": c["reason"] or c["result"]})
        st.details["failed_cases"] += [{"name": name, "reason": p}
                                       for p in r["problems"]]
    st.summary = ", ".join("%s %d/%d/%d" % (n, r["pass"], r["fail"], r["skip"])
                           for n, r in results.items()) + " (pass/fail/skip)"


def run_selftests(ws, args, name="selftests", rows=None, timeout=900, detail=""):
    out = ws.dir(name)
    rows = rows or scenarios(ws.root / "selftests/scenarios", args.scenarios)
    with Stage(ws, name, detail) as st:
        if not (ws.tree / "tools/testing/selftests/yama/Makefile").exists():
            raise StageError("no tools/testing/selftests/yama in %s" % ws.tree)
        results = {}
        for frags in dict.fromkeys(r[3] for r in rows):     # one kernel each
            kdir = qemu.kernel_dir(ws, frags.split())
            with qemu.locked(kdir):
                kernel = qemu.build_kernel(ws, ws.tree, kdir, after=frags.split())
                initrd, programs = prepare(ws, ws.tree, kdir, out / "bin" / kdir.name)
                results.update(boots(kernel, initrd, [r for r in rows if r[3] == frags],
                                     out, programs, timeout=timeout))
        publish(st, results)
    return st.exit_code


def run_vfs_diff(ws, args):
    """The differential test with a seed of its own and more cases."""
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "big")
    cases = 1 if args.case is not None else args.cases
    secs = cases // 100 + 300      # ~2 ms a case under TCG, 10 ms allowed
    name, cmdline, checks, frags = scenarios(ws.root / "selftests/scenarios", ["vfs-diff"])[0]
    cmdline += " vfsdiff.seed=%d vfsdiff.cases=%d selftests.timeout=%d" % (seed, cases, secs)
    if args.case is not None:
        cmdline += " vfsdiff.case=%d" % args.case
        checks = ""     # one case exercises one group only
    print("  seed %d, %d cases; again: make vfs-diff VFSDIFF_SEED=%d VFSDIFF_CASES=%d"
          " (one case: VFSDIFF_CASE=N)" % (seed, cases, seed, cases))
    rc = run_selftests(ws, args, "vfs-diff", [(name, cmdline, checks, frags)], secs + 60,
                       "seed %d" % seed)
    log = ws.build / "vfs-diff" / name / "ktap.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    for line in [l for l in lines if l.startswith("# # DISAGREE")][:20] + \
            [l for l in lines if l.startswith("# # vfs_diff:")]:
        print("  " + line[4:])
    return rc


def vfs_diff_args(p):
    p.add_argument("--seed", type=int, help="replay this seed (default: a new one)")
    p.add_argument("--cases", type=int, default=100000, help="cases to generate")
    p.add_argument("--case", type=int, help="replay case N of the seed alone")


COMMANDS = {
    "selftests": ("Yama kselftests in QEMU, one boot per selftests/scenarios line (SCENARIO=name: one)",
                  lambda p: p.add_argument("scenarios", nargs="*",
                                           help="scenarios to boot (default: all)"),
                  run_selftests),
    "vfs-diff": ("the differential test of Yama's link rules against the VFS's on random cases "
                 "(VFSDIFF_SEED=, VFSDIFF_CASES=; VFSDIFF_CASE= replays one)",
                 vfs_diff_args, run_vfs_diff),
}
