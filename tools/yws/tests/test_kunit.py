"""make kunit with a fake kunit.py: counts from its --json, the failed
cases named, a console splat or a missing result fails the stage."""
import json
import subprocess
from types import SimpleNamespace

import pytest

from yws import kunit, results
from yws.ws import Workspace


def case(name, status):
    return {"name": name, "status": status}


def report(*bad):
    """A kunit.py --json tree: suite yama_ptrace (3 cases, one
    parameterised) and yama_links; BAD replaces statuses by case name."""
    st = lambda n, s="PASS": case(n, dict(bad).get(n, s))
    return {"name": "KUnit Test Group", "test_cases": [], "sub_groups": [
        {"name": "yama_ptrace", "test_cases": [st("scope0"), st("scope3", "SKIP")],
         "sub_groups": [{"name": "relation", "sub_groups": [],
                         "test_cases": [st("depth1"), st("depth16")]}]},
        {"name": "yama_links", "sub_groups": [], "test_cases": [st("sticky")]}]}


FAKE = '''import json, os, sys
a = dict(x[2:].split("=", 1) for x in sys.argv[2:] if x.startswith("--") and "=" in x)
assert sys.argv[1] == "run" and a["arch"] == "x86_64" and a["kunitconfig"] == "security/yama"
os.makedirs(a["build_dir"], exist_ok=True)
open(os.path.join(a["build_dir"], "test.log"), "w").write(os.environ.get("FAKE_CONSOLE", ""))
if os.environ.get("FAKE_JSON"):
    open(a["json"], "w").write(os.environ["FAKE_JSON"])
sys.exit(int(os.environ.get("FAKE_RC", "0")))
'''


@pytest.fixture
def ws(tmp_path):
    root, tree = tmp_path / "ws", tmp_path / "ws/author"
    (tree / "security/yama").mkdir(parents=True)
    (tree / "security/yama/.kunitconfig").write_text("CONFIG_KUNIT=y\n")
    (tree / "tools/testing/kunit").mkdir(parents=True)
    (tree / "tools/testing/kunit/kunit.py").write_text(FAKE)
    for d in (root, tree):
        subprocess.run(["git", "init", "-q", d], check=True)
    (root / ".gitignore").write_text("/build/\n/out/\n/author/\n")
    subprocess.run(["git", "-C", tree, "add", "."], check=True)
    return Workspace(root=root)


def run(ws, monkeypatch, top, console="", rc=0):
    monkeypatch.setenv("FAKE_JSON", json.dumps(top) if top else "")
    monkeypatch.setenv("FAKE_CONSOLE", console)
    monkeypatch.setenv("FAKE_RC", str(rc))
    code = kunit.run_kunit(ws, SimpleNamespace(filter_glob="yama*"))
    return code, results.read(ws.results, "kunit")


def test_counts_come_from_kunit_json(ws, monkeypatch):
    code, r = run(ws, monkeypatch, report())
    assert code == 0 and r["verdict"] == "pass"
    assert (r["passed"], r["failed"], r["skipped"]) == (4, 0, 1)
    assert r["details"]["suites"]["yama_ptrace"] == {"pass": 3, "fail": 0, "skip": 1}
    assert r["tree"] and r["details"]["failed_cases"] == []


def test_a_failed_or_crashed_case_fails_the_stage_by_name(ws, monkeypatch):
    code, r = run(ws, monkeypatch, report(("depth16", "FAIL"), ("sticky", "ERROR")), rc=1)
    assert code == 1 and r["verdict"] == "fail" and r["failed"] == 2
    assert r["details"]["failed_cases"] == [
        {"name": "yama_ptrace.relation.depth16", "reason": "FAIL"},
        {"name": "yama_links.sticky", "reason": "ERROR"}]


def test_a_panic_counts_the_top_groups_nameless_cases(ws, monkeypatch):
    """kunit.py lists what a panic cut off as nameless ERROR cases of its top group."""
    top = dict(report(), test_cases=[case("", "ERROR")])
    code, r = run(ws, monkeypatch, top, rc=1)
    assert code == 1 and r["details"]["suites"]["KUnit Test Group"]["fail"] == 1


def test_a_splat_on_the_console_fails_even_when_every_case_passed(ws, monkeypatch):
    code, r = run(ws, monkeypatch, report(),
                  console="ok 1 yama\nBUG: sleeping function called from invalid context\n")
    assert code == 1 and r["failed"] == 1
    assert r["details"]["failed_cases"][0]["reason"].startswith("atomic sleep: BUG")


def test_no_results_or_a_kunit_py_error_fails(ws, monkeypatch):
    code, r = run(ws, monkeypatch, None, rc=1)
    assert code == 1 and "kunit.py exit 1 and no results" in r["summary"]
    code, r = run(ws, monkeypatch, report(), rc=1)
    assert code == 1 and r["details"]["failed_cases"][0]["name"] == "kunit.py"
    code, r = run(ws, monkeypatch, {"name": "KUnit Test Group", "sub_groups": []})
    assert code == 1 and r["passed"] == 0
