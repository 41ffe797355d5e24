"""make kunit: Yama's KUnit suites the way a maintainer runs them,

    ./tools/testing/kunit/kunit.py run --arch=x86_64 --kunitconfig=security/yama

in the tree, with the workspace's build folder, make flags and ccache;
the counts come from kunit.py's --json, splats from its console log.
"""
import json
import os

from . import splats
from .qemu import make_env
from .ws import KBUILD_FLAGS, PYTHON, Stage, StageError, run

BUILD_TIMEOUT = 5400    # kunit.py as a whole: a cold build on 2 cores
BOOT_TIMEOUT = 600      # one QEMU run (kunit.py --timeout)


def count(node, suite=None, path=()):
    """{suite: {pass, fail, skip}} and the failed cases of a kunit.py --json
    tree; a crashed case (ERROR) or any status but PASS and SKIP fails."""
    suites, failed = {}, []
    for case in node.get("test_cases", []):
        key = {"PASS": "pass", "SKIP": "skip"}.get(case.get("status"), "fail")
        s = suites.setdefault(suite or node["name"], {"pass": 0, "fail": 0, "skip": 0})
        s[key] += 1
        if key == "fail":
            failed.append({"name": ".".join((*path, case["name"])),
                           "reason": case.get("status") or "no status"})
    for sub in node.get("sub_groups", []):
        sub_suites, sub_failed = count(sub, suite or sub["name"],
                                       (*path, sub["name"]))
        for name, s in sub_suites.items():
            mine = suites.setdefault(name, {"pass": 0, "fail": 0, "skip": 0})
            for k in s:
                mine[k] += s[k]
        failed += sub_failed
    return suites, failed


def publish(st, top, console, rc, log):
    """Count kunit.py's json TOP and the console's splats into stage ST."""
    if top is None:
        raise StageError("kunit.py exit %d and no results, see %s" % (rc, log))
    suites, failed = count(top)
    failed += splats.failures(console, "console")
    st.passed = sum(s["pass"] for s in suites.values())
    st.skipped = sum(s["skip"] for s in suites.values())
    st.failed = len(failed)
    if rc and not failed:
        st.failed, failed = 1, [{"name": "kunit.py", "reason": "exit %d" % rc}]
    st.details = {"suites": suites, "failed_cases": failed, "kunit_rc": rc}
    st.summary = ", ".join("%s %d" % (n, sum(s.values()))
                           for n, s in sorted(suites.items()))
    if failed:
        st.summary = "%s: %s (%s)" % (st.summary, failed[0]["name"],
                                      failed[0]["reason"])


def run_kunit(ws, args):
    out = ws.dir("kunit")
    kdir, js, log = out, out / "results.json", out / "kunit.log"   # out: kunit.py's build_dir
    with Stage(ws, "kunit") as st:
        kunitpy = ws.tree / "tools/testing/kunit/kunit.py"
        if not (ws.tree / "security/yama/.kunitconfig").exists():
            raise StageError("no security/yama/.kunitconfig in %s" % ws.tree)
        for f in (js, log, kdir / "test.log"):
            f.unlink(missing_ok=True)
        rc = run([PYTHON, kunitpy, "run", "--arch=x86_64",
                  "--kunitconfig=security/yama", "--build_dir=%s" % kdir,
                  "--make_options=CC=ccache gcc",
                  *("--make_options=" + f for f in KBUILD_FLAGS),
                  "--jobs=%d" % os.cpu_count(), "--timeout=%d" % BOOT_TIMEOUT,
                  "--json=%s" % js, args.filter_glob],
                 cwd=ws.tree, env=make_env(ws), log=log, label="kunit.py run",
                 timeout=BUILD_TIMEOUT, check=False).returncode
        top = json.loads(js.read_text()) if js.exists() else None
        console = kdir / "test.log"
        publish(st, top, console.read_text(errors="replace")
                if console.exists() else "", rc, log)
    return st.exit_code


COMMANDS = {"kunit": (
    "Yama's KUnit suites: kunit.py run --arch=x86_64 --kunitconfig=security/yama",
    lambda p: p.add_argument("filter_glob", nargs="?", default="yama*",
                             help="kunit.py's suite filter (default: yama*)"),
    run_kunit)}
