"""Shared by every test of tools/tests: WS is the workspace these tests
sit in (the code they test is next to them), exported for the scripts they
run, and the Python modules of the stages are importable by name."""
import json
import os
import subprocess
import sys

import pytest

WS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["WS"] = WS
# A stage's folders and choices that a caller may have set for its own run
# (TREE or RESULTS in the environment, make check STAGES=...) would point
# the stages these tests run at the caller's: each test sets what it
# needs. BUILD stays (the slow posting tests take it; every folder not set
# here is derived from it).
for _name in ("TREE", "RESULTS", "OUT", "SERIES_DIR", "SERIES_CHECK_OUT", "GATES_DIR",
              "POSTING_OUT", "POSTING_WORK", "REVIEW_DIR", "KUNIT_OUT", "SELFTESTS_OUT",
              "VFSDIFF_OUT", "MAIN_RESULTS", "COVER_DIR", "B4_CONFIG", "BASE_CONF", "MBOX",
              "STAGES", "SCENARIOS", "MUTATIONS", "KUNIT_FILTER", "KUNIT_CONFIGS",
              "FORCE", "REAPPLY"):
    os.environ.pop(_name, None)
for d in ("tools", "tools/mail", "tools/gates", "selftests/stress"):
    sys.path.insert(0, os.path.join(WS, d))


@pytest.fixture
def ktap(tmp_path):
    """selftests/ktap.py on a result channel and a console given as text:
    judge(log, console, *options) -> (exit code, stdout, results.json)."""
    def judge(log, console="", *args, name="t"):
        (tmp_path / "ktap.log").write_text(log)
        (tmp_path / "console.log").write_text(console)
        out = tmp_path / "r.json"
        p = subprocess.run([sys.executable, os.path.join(WS, "selftests", "ktap.py"), name,
                            str(tmp_path / "ktap.log"), str(tmp_path / "console.log"),
                            str(out), *args], capture_output=True, text=True)
        assert out.exists(), p.stderr
        return p.returncode, p.stdout, json.loads(out.read_text())
    return judge
