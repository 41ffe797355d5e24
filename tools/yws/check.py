"""make check and make: the stages in order, one summary, one count line.

Each stage runs as its own `python3 -m yws STAGE` process and is judged
only by the result it published (build/results/<stage>.json); a stage that
exits non-zero or publishes nothing has failed, whatever it printed. A
stage whose last result passed on this very tree, with this workspace's
code and the same arguments, is not run again (--rerun runs it anyway):
only the stages whose inputs are exactly those (REUSABLE); the posting
also depends on cover-letter/ and the sender, and is always made again.
"""
import os
import subprocess
import time
import xml.etree.ElementTree as ET

from . import results
from .ws import PYTHON, ROOT, Stage, StageError, run, tree_state, workspace_id

CHECK = [("test-tools", []), ("tree", []), ("round-trip", []),
         ("series-check", []), ("kunit", []), ("selftests", []),
         ("posting", [])]
ALL = [("tree", []), ("series-check", []), ("kunit", []),
       ("selftests", ["default"]), ("posting", [])]
NEEDS_NO_TREE = {"test-tools", "tree"}
REUSABLE = {"test-tools", "series-check", "kunit", "selftests"}


def _global_flags(ws):
    flags = ["--build", ws.build, "--out", ws.out, "--tree", ws.tree,
             "--series", ws.series, "--base", ws.base]
    return flags + (["--sender", ws.sender] if ws.sender else [])


def reusable(ws, stage, argv):
    """The stage's passing result, if it is for the tree as it is now,
    this workspace's code and the same arguments."""
    rec = results.read(ws.results, stage)
    if not rec or rec["verdict"] != "pass" or rec["argv"] != [stage, *argv]:
        return None
    if rec["workspace"] != workspace_id(ws):
        return None
    if stage == "test-tools":
        return rec
    if not (ws.tree / ".git").exists() or rec["tree"] != tree_state(ws.tree)[0]:
        return None
    return rec


def spawn(cmd):
    """Run one stage's process; its exit status."""
    return subprocess.run(cmd, cwd=ROOT, env={
        **os.environ, "PYTHONPATH": str(ROOT / "tools")}).returncode


def run_stage(ws, stage, argv, rerun=False, result=None):
    """Run one stage in its own process; its published result (named
    RESULT when the stage publishes under another name)."""
    result = result or stage
    if not rerun and stage in REUSABLE and reusable(ws, stage, argv):
        print("== %s: pass on this tree already (make %s to run it again)"
              % (stage, stage), flush=True)
        return results.read(ws.results, stage)
    start = time.time()
    results.remove(ws.results, result)
    rc = spawn([PYTHON, "-m", "yws", *map(str, _global_flags(ws)), stage, *argv])
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
    for stage, argv in stages:
        tree_failed = any(r["stage"] == "tree" and r["verdict"] != "pass" for r in recs)
        if tree_failed and stage not in NEEDS_NO_TREE:
            print("== %s: not run, the tree stage failed" % stage)
            recs.append({"stage": stage, "verdict": "not run", "passed": 0,
                         "failed": 1, "skipped": 0, "seconds": 0})
            continue
        print(flush=True)
        recs.append(run_stage(ws, stage, argv, rerun))
    return summarize(ws, recs, time.time() - start)


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
    with Stage(ws, "test-tools", "tests of the workspace (%s)" % args.tests,
               tree=None) as st:
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


COMMANDS = {
    "check": ("all tests in order (test-tools, tree, round-trip, series-check, "
              "kunit, selftests, posting); summary and count line",
              _rerun, lambda ws, a: pipeline(ws, CHECK, a.rerun)),
    "all": ("the posting, checked: tree, gates, KUnit, the default kselftest "
            "boot, then posting", _rerun, lambda ws, a: pipeline(ws, ALL, a.rerun)),
    "test-tools": ("pytest on tools/yws/tests", _test_args, test_tools),
}
