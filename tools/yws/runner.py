"""The runner: make, make check, make check-debug and make review run
their stages in order, and only the runner starts a stage.

Each stage runs as its own `python3 -m yws STAGE` process and is judged
only by the result it published (build/results/<stage>.json); a stage that
exits non-zero or publishes nothing has failed, whatever it printed. A
stage whose last result still holds (results.fresh: this tree, this
workspace's code, the same arguments) is not run again (--rerun runs it
anyway); the posting also depends on cover-letter/ and the sender, and is
always made again. One summary table, one closing count line.
"""
import os
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

from . import inbox, results, review
from .ws import PYTHON, ROOT, Stage, StageError, run, tree_state, workspace_id

# (stage, arguments[, the result it publishes when not its own name])
PIPELINES = {
    "check": [("test-tools", []), ("prep", []), ("round-trip", []), ("series-check", []),
              ("kunit", []), ("selftests", []), ("posting", [])],
    "all": [("prep", []), ("series-check", []), ("kunit", []), ("selftests", ["default"]),
            ("posting", [])],
    "check-debug": [("prep", []), ("series-check", ["--sysctl-whole"], "series-check-sysctl-whole"),
                    ("check-debug", [])]}
NEEDS_NO_TREE = {"test-tools", "prep"}
REUSABLE = {"test-tools", "series-check", "kunit", "selftests"}


def _global_flags(ws):
    flags = ["--build", ws.build, "--out", ws.out, "--tree", ws.tree,
             "--series", ws.series, "--base", ws.base]
    return flags + (["--sender", ws.sender] if ws.sender else [])


def spawn(cmd, log=None, timeout=None):
    """Run one stage's process (its output into LOG when given); its exit status."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    if log:
        return run(cmd, cwd=ROOT, env=env, log=log, timeout=timeout, check=False,
                   label="%s (log %s)" % (cmd[-1], log)).returncode
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


def run_stage(ws, stage, argv, rerun=False, result=None, log=None, timeout=None):
    """Run one stage in its own process; its published result (named
    RESULT when the stage publishes under another name). The only
    starter of stages: the pipelines here and make mutations call it."""
    result = result or stage
    if not rerun and stage in REUSABLE:
        rec, why = results.fresh(ws, result, [stage, *argv])
        if rec:
            print("== %s: pass on this tree already (make %s to run it again)"
                  % (stage, stage), flush=True)
            return rec
        print("== %s: runs (its last result: %s)" % (stage, why), flush=True)
    start = time.time()
    results.remove(ws.results, result)
    rc = spawn([PYTHON, "-m", "yws", *map(str, _global_flags(ws)), stage, *argv], log=log, timeout=timeout)
    rec = results.read(ws.results, result)
    if rec is None or rec["verdict"] == "pass" and rc != 0:
        why = "exit %d, %s" % (rc, "no result published" if rec is None
                               else "but it published a pass")
        print("== %s: fail (%s)" % (stage, why), flush=True)
        results.write(ws.results, result, verdict="fail",
                      passed=rec["passed"] if rec else 0, failed=1, skipped=0,
                      seconds=time.time() - start, tree=None, dirty=False,
                      argv=[stage, *argv], workspace=workspace_id(ws),
                      summary=why, details={})
        rec = results.read(ws.results, result)
    return rec


def pipeline(ws, stages, rerun=False):
    """Run STAGES in order, past failures; print the summary; exit status."""
    start = time.time()
    recs = []
    for stage, argv, *result in stages:
        tree_failed = any(r["stage"] == "prep" and r["verdict"] != "pass" for r in recs)
        if tree_failed and stage not in NEEDS_NO_TREE:
            print("== %s: not run, the prep stage failed" % stage)
            recs.append({"stage": stage, "verdict": "not run", "passed": 0,
                         "failed": 1, "skipped": 0, "seconds": 0})
            continue
        print(flush=True)
        recs.append(run_stage(ws, stage, argv, rerun, *result))
    return summarize(ws, recs, time.time() - start)


def run_review(ws, args):
    """make review: the review stage (b4 am, lint, range-diff), then the
    stages on the applied tree, in the review's own workspace."""
    start, rws = time.time(), review.workspace(ws)
    recs = [run_stage(ws, "review", ["--msgid", args.msgid] if args.msgid else [args.mbox or ""],
                      rerun=True)]
    if recs[0]["verdict"] == "pass":
        recs += [run_stage(rws, s, [], rerun=True) for s in review.STAGES]
    return summarize(rws, recs, time.time() - start)


def clean(ws, args):
    """Remove build/ and out/ (the local list stopped first); the author's
    tree is not under them. A partly sent posting is kept: make send resumes it."""
    half = [str(p.parent) for p in ws.out.glob("posting/*/v*/sent")
            if not (ws.root / "cover-letter" / p.parent.parent.name / "posted" /
                    (p.parent.name + ".mbox")).exists()]
    if half:
        raise StageError("%s is partly sent: make send sends the rest first" % half[0])
    inbox.stop(ws)
    for d in (ws.build, ws.out):
        shutil.rmtree(d, ignore_errors=True)
    print("removed %s and %s (the author's tree %s stays)" % (ws.build, ws.out, ws.tree))
    return 0


def summarize(ws, recs, seconds):
    """The summary table and the closing count line; 0 only if all passed."""
    tid, dirty = tree_state(ws.tree) if (ws.tree / ".git").exists() else (None, False)
    print("\n== summary (%ds) of tree %s%s" % (
        seconds, (tid or "none")[:12],
        " (with uncommitted edits)" if dirty else ""))
    print("%-14s %-8s %8s %8s %8s %8s  %s" % ("stage", "verdict", "passed", "failed",
                                             "skipped", "seconds", "tree"))
    bad = False
    for r in recs:
        other = bool(r.get("tree") and tid and r["tree"] != tid)
        print("%-14s %-8s %8d %8d %8d %8d  %s" % (
            r["stage"], r["verdict"], r["passed"], r["failed"], r["skipped"],
            r["seconds"], ((r.get("tree") or "-")[:12] +
                           (" (another tree)" if other else ""))))
        bad = bad or r["verdict"] != "pass" or other
    passed = sum(r["passed"] for r in recs)
    failed = sum(r["failed"] for r in recs)
    if bad and not failed:
        failed = 1
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if bad or failed else 0


def test_tools(ws, args):
    """pytest on the workspace's own tests; counts from its JUnit XML."""
    with Stage(ws, "test-tools", args.tests, tree=None) as st:
        xml = ws.dir("test-tools") / "junit.xml"
        xml.unlink(missing_ok=True)
        res = run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "--junitxml", xml, args.tests, *args.pytest_args],
                  cwd=ROOT, check=False,
                  env={"PYTHONPATH": ROOT / "tools"}, label="pytest")
        try:
            root = ET.parse(xml).getroot()
        except (OSError, ET.ParseError):
            raise StageError("pytest wrote no report (exit %d)" % res.returncode)
        for case in root.iter("testcase"):
            kind = {c.tag for c in case}
            name = "%s::%s" % (case.get("classname"), case.get("name"))
            if kind & {"failure", "error"}:
                st.failed += 1
                st.details.setdefault("failed_cases", []).append(
                    {"name": name, "reason": "failed"})
            elif "skipped" in kind:
                st.skipped += 1
                print("  SKIP %s: %s" % (name, case.find("skipped").get("message")))
            else:
                st.passed += 1
        if res.returncode and not st.failed:
            raise StageError("pytest exit %d with no failed test" % res.returncode)
    return st.exit_code


def _rerun(p):
    p.add_argument("--rerun", action="store_true",
                   help="run every stage, also one that passed on this tree")


def _test_args(p):
    p.add_argument("--tests", default=str(ROOT / "tools" / "yws" / "tests"),
                   help="the test folder (default: tools/yws/tests)")
    p.add_argument("pytest_args", nargs="*", help="passed to pytest")


def run_pipeline(ws, args):
    """make, make check, make check-debug, make review: one pipeline."""
    if args.pipeline != "review" and (args.mbox or args.msgid):
        raise SystemExit("error: run %s takes no MBOX or MSGID" % args.pipeline)
    return run_review(ws, args) if args.pipeline == "review" else \
        pipeline(ws, PIPELINES[args.pipeline], args.rerun)


ABOUT = {"all": "(plain make) the posting, checked", "check": "all tests",
         "check-debug": "the series on a debug kernel, and the SYSCTL=n tip built whole",
         "review": "a maintainer's view of MSGID=<message-id> or MBOX=FILE"}


def stages_of(name):
    """The stages a pipeline runs, as make help and --help show them."""
    return " ".join(" ".join([s[0]] + s[1]) for s in PIPELINES[name]) if name in PIPELINES \
        else " ".join(["review"] + review.STAGES)


def _run_args(p):
    p.add_argument("pipeline", choices=list(ABOUT), help="; ".join(
        "%s: %s (%s)" % (n, a, stages_of(n)) for n, a in ABOUT.items()))
    p.add_argument("mbox", nargs="?", help="review: the thread, an mbox file")
    p.add_argument("--msgid", help="review: the thread's message-id, from the archive")
    _rerun(p)


def help_targets(ws, args):
    """make help: every target with its one description (ABOUT, COMMANDS)."""
    from .__main__ import commands
    cmds = commands()
    rows = [(n, "%s: %s, then the summary" % (a, stages_of(n))) for n, a in ABOUT.items()]
    rows += [(n, c[0]) for n, c in cmds.items() if n not in ABOUT and n != "run"]
    print("\n".join("  make %-15s %s" % row for row in rows))
    return 0


COMMANDS = {
    "run": ("run a pipeline of stages (%s): a summary and the count line" % ", ".join(ABOUT),
            _run_args, run_pipeline),
    "help": ("list the make targets and what each does", None, help_targets),
    "clean": ("remove build/ and out/ (the author's tree author/ stays)", None, clean),
    "test-tools": ("pytest on tools/yws/tests", _test_args, test_tools),
}
