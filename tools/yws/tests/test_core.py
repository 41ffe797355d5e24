"""ws.py, results.py, prep.py, runner.py: the core of the workspace."""
import json
import pytest

from yws import runner, results, prep
from yws.ws import Stage, StageError, Workspace, run, shared_clone, tree_state, workspace_id
from conftest import sh


def test_tree_state_sees_uncommitted_and_untracked_edits(repo):
    clean, dirty = tree_state(repo)
    assert not dirty and clean == sh("git", "rev-parse", "HEAD^{tree}", cwd=repo)
    (repo / "a.c").write_text("int edited;\n")
    edited, dirty = tree_state(repo)
    assert dirty and edited != clean
    (repo / "new.c").write_text("int n;\n")
    assert tree_state(repo)[0] not in (clean, edited)
    assert sh("git", "status", "--porcelain", cwd=repo).count("\n") == 1  # index untouched


def test_workspace_id_is_the_code_not_logs_or_prose(repo, tmp_path):
    """A stray file, a note or a README edit leaves the results fresh; an
    edit of the code (committed or not) does not."""
    for d in ("notes", "tools", "series/mutations"):
        (repo / d).mkdir(parents=True)
        (repo / d / "f").write_text("x\n")
    for f in ("series/series", "series/0001-a.patch"):
        (repo / f).write_text("x\n")
    (repo / "README.md").write_text("# read me\n")
    sh("git", "add", ".", cwd=repo)
    sh("git", "commit", "-qm", "layout", cwd=repo)
    w = Workspace(root=repo, build=tmp_path / "build")
    first = workspace_id(w)
    (repo / "make.log").write_text("a log beside the Makefile\n")
    (repo / "notes" / "mine.txt").write_text("a note\n")
    (repo / "README.md").write_text("# read me, edited\n")
    (repo / "notes" / "f").write_text("edited note\n")
    (repo / "series" / "0001-a.patch").write_text("the series has its own tree id\n")
    (repo / "series" / "series").write_text("0001-a.patch\n")
    assert workspace_id(w) == first
    (repo / "series" / "mutations" / "f").write_text("a planted bug is code\n")
    assert workspace_id(w) != first
    (repo / "series" / "mutations" / "f").write_text("x\n")
    (repo / "tools" / "f").write_text("edited tool\n")
    edited = workspace_id(w)
    assert edited != first
    sh("git", "commit", "-qam", "tool", cwd=repo)
    assert workspace_id(w) == edited
    assert "make.log" in sh("git", "status", "--porcelain", cwd=repo)  # index untouched


def test_a_shared_clone_borrows_objects_and_follows_head(repo, tmp_path):
    (repo / "a.c").write_text("int edited;\n")         # the tree's own edit
    dest = shared_clone(repo, tmp_path / "c", "refs/x/tip")
    assert (dest / ".git/objects/info/alternates").read_text().strip() == \
        str(repo / ".git/objects")
    assert sh("git", "rev-parse", "refs/x/tip", cwd=dest) == \
        sh("git", "rev-parse", "HEAD", cwd=repo)
    assert not (dest / "a.c").exists()                   # no checkout made
    sh("git", "commit", "-qam", "change 3", cwd=repo)
    shared_clone(repo, dest, "refs/x/tip")               # made once, moved on
    assert sh("git", "rev-parse", "refs/x/tip", cwd=dest) == \
        sh("git", "rev-parse", "HEAD", cwd=repo)
    assert sh("git", "status", "--porcelain", cwd=repo) == ""


def test_stage_publishes_tree_id_and_counts(ws):
    with Stage(ws, "unit", "a test stage") as st:
        st.passed = 3
    rec = results.read(ws.results, "unit")
    assert rec["verdict"] == "pass" and rec["passed"] == 3
    assert rec["tree"] == tree_state(ws.tree)[0] and rec["argv"] == ["x"]
    assert st.exit_code == 0


@pytest.mark.parametrize("body,summary", [
    (lambda st: setattr(st, "failed", 1), ""),
    (lambda st: None, "nothing was tested"),
    (lambda st: (_ for _ in ()).throw(StageError("no kernel")), "no kernel"),
])
def test_stage_fails_on_failures_on_nothing_and_on_errors(ws, body, summary):
    with Stage(ws, "unit", "a test stage") as st:
        body(st)
    rec = results.read(ws.results, "unit")
    assert rec["verdict"] == "fail" and rec["failed"] >= 1 and st.exit_code == 1
    assert rec["summary"] == summary


def test_fresh_only_for_the_same_tree(ws):
    with Stage(ws, "unit", "x") as st:
        st.passed = 1
    assert results.fresh(ws, "unit") == (results.read(ws.results, "unit"), None)
    (ws.tree / "a.c").write_text("int other;\n")
    rec, why = results.fresh(ws, "unit")
    assert rec is None and why == "the tree changed since it ran (a.c)"


def test_run_reports_exit_and_kills_on_timeout(tmp_path):
    with pytest.raises(StageError, match="false: exit 1"):
        run(["false"])
    with pytest.raises(StageError, match="no result after 1s"):
        run(["sh", "-c", "sleep 30 & wait"], timeout=1)
    assert run(["sh", "-c", "echo hi"], capture=True).stdout == "hi\n"


def _fake_stage(monkeypatch, ws, verdict, rc, passed=2, failed=0):
    def fake(cmd, **kw):
        stage = cmd[cmd.index("--base") + 2]
        if verdict:
            results.write(ws.results, stage, verdict=verdict, passed=passed,
                          failed=failed, skipped=0, seconds=1, tree=None,
                          dirty=False, argv=[stage], workspace="w",
                          summary="", details={})
        return rc
    monkeypatch.setattr(runner, "spawn", fake)


def test_check_exit_status_follows_the_stages(ws, monkeypatch, capsys):
    _fake_stage(monkeypatch, ws, "pass", 0)
    assert runner.pipeline(ws, [("a", []), ("b", [])], rerun=True) == 0
    assert capsys.readouterr().out.endswith("4 passed, 0 failed\n")
    _fake_stage(monkeypatch, ws, "fail", 1, passed=1, failed=1)
    assert runner.pipeline(ws, [("a", [])], rerun=True) == 1
    assert capsys.readouterr().out.endswith("1 passed, 1 failed\n")


@pytest.mark.parametrize("verdict,rc", [("pass", 1), (None, 0), (None, 1)])
def test_a_stage_that_lies_or_publishes_nothing_fails(ws, monkeypatch, capsys, verdict, rc):
    _fake_stage(monkeypatch, ws, verdict, rc)
    assert runner.pipeline(ws, [("a", [])], rerun=True) == 1
    out = capsys.readouterr().out
    assert results.read(ws.results, "a")["verdict"] == "fail"
    assert out.splitlines()[-1].endswith(", 1 failed")


def test_summary_names_the_tree_and_edits(ws, capsys):
    (ws.tree / "a.c").write_text("int edited;\n")
    runner.summarize(ws, [], 1)
    out = capsys.readouterr().out
    assert tree_state(ws.tree)[0][:12] in out and "uncommitted edits" in out


def test_export_round_trip_and_refusals(ws):
    prep.export_to(ws, ws.series)
    (ws.series / "mutations").mkdir()       # planted bugs: no part of the series
    (ws.series / "mutations/0003-x.patch").write_text("Into patch: 1\n")
    assert [p.name for p in prep.series_files(ws)] == [
        "0001-change-1.patch", "0002-change-2.patch"]
    assert prep.export_differs(ws)[0] == []
    (ws.series / "0002-change-2.patch").write_text("changed\n")
    assert prep.export_differs(ws)[0] == ["0002-change-2.patch"]


def test_apply_series_names_the_patch_that_fails(ws):
    prep.export_to(ws, ws.series)
    sh("git", "reset", "-q", "--hard", "base", cwd=ws.tree)
    (ws.series / "0002-change-2.patch").write_text(
        (ws.series / "0002-change-2.patch").read_text().replace("-int a1;", "-int zz;"))
    with pytest.raises(StageError, match="0002-change-2.patch does not apply"):
        prep.apply_series(ws, ws.tree, prep.series_files(ws))
    assert sh("git", "log", "-1", "--format=%s", cwd=ws.tree) == "change 1"


def test_tree_refuses_to_lose_unexported_work(ws, monkeypatch):
    prep.export_to(ws, ws.series)
    (ws.tree / ".git" / prep.SYNCED).write_text(sh("git", "rev-parse", "HEAD", cwd=ws.tree))
    (ws.tree / "a.c").write_text("int mine;\n")
    assert prep._reuse_or_reset(ws, force=False)       # edits on series/: kept
    sh("git", "commit", "-qam", "mine", cwd=ws.tree)
    with pytest.raises(StageError, match="make export, or FORCE=1"):
        prep._reuse_or_reset(ws, force=False)
    assert not prep._reuse_or_reset(ws, force=True)
    assert prep.build(ws, ws.tree) == 2, "series/ again, the work dropped"
    assert sh("git", "log", "-1", "--format=%s", cwd=ws.tree) == "change 2"


def test_results_refuse_unknown_verdicts_and_read_garbage_as_none(ws):
    with pytest.raises(ValueError):
        results.write(ws.results, "x", verdict="ok", passed=0, failed=0, skipped=0,
                      seconds=0, tree=None, dirty=False, argv=[], workspace="",
                      summary="", details={})
    ws.results.mkdir(parents=True)
    (ws.results / "y.json").write_text(json.dumps({"verdict": "pass"}))
    assert results.read(ws.results, "y") is None


def test_series_check_counts_a_failed_cell(ws, monkeypatch, tmp_path):
    """A FAIL cell of the gates fails the stage and is counted."""
    import argparse
    from yws import series_check as gates
    cells = {"patch 1/1": {"checkpatch": {"status": "FAIL", "detail": ["ERROR: x"]},
                           "build": {"status": "pass", "detail": []}}}
    monkeypatch.setattr(gates.Gates, "__init__", lambda self, ws, whole=False: None)
    monkeypatch.setattr(gates.Gates, "run", lambda self, st: cells)
    assert gates.stage(ws, argparse.Namespace(sysctl_whole=False)) == 1
    rec = results.read(ws.results, "series-check")
    assert rec["verdict"] == "fail" and rec["failed"] == 1 and rec["passed"] == 1
    assert rec["details"]["failed_cases"][0]["name"] == "patch 1/1 checkpatch"


def test_test_tools_fails_on_a_failing_test(ws, tmp_path):
    import argparse
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_x.py").write_text("def test_ok():\n    pass\n\n"
                                     "def test_bad():\n    assert 1 == 2\n")
    assert runner.test_tools(ws, argparse.Namespace(tests=str(tests), pytest_args=[])) == 1
    rec = results.read(ws.results, "test-tools")
    assert (rec["passed"], rec["failed"]) == (1, 1)


def test_the_command_line_exit_status_is_the_pipeline_s(ws, monkeypatch):
    from yws import __main__ as cli
    _fake_stage(monkeypatch, ws, "fail", 1, passed=0, failed=1)
    monkeypatch.setitem(runner.PIPELINES, "check", [("a", [])])
    argv = ["--build", str(ws.build), "--tree", str(ws.tree), "run", "check", "--rerun"]
    assert cli.main(argv) == 1
    _fake_stage(monkeypatch, ws, "pass", 0)
    assert cli.main(argv) == 0


def test_a_reused_pass_needs_the_same_tree_and_test_code(ws, tmp_path, monkeypatch):
    """A stale reuse cannot change a verdict: an edit of the tree or of the
    workspace's own files (unstaged) makes the stage run again."""
    from conftest import sh
    root = tmp_path / "wsroot"
    root.mkdir()
    sh("git", "init", "-q", cwd=root)
    (root / "tool.py").write_text("x = 1\n")
    sh("git", "add", ".", cwd=root)
    sh("git", "-c", "user.name=T", "-c", "user.email=t@e.org", "commit", "-qm", "w", cwd=root)
    ws.root = root
    with Stage(ws, "kunit", "x", argv=["kunit"]) as st:
        st.passed = 1
    holds = lambda argv=["kunit"]: results.fresh(ws, "kunit", argv)
    assert holds()[0]
    (root / "tool.py").write_text("x = 2\n")                 # unstaged edit of the test code
    assert holds() == (None, "the workspace's code changed since it ran (tool.py)")
    (root / "tool.py").write_text("x = 1\n")
    assert holds()[0]
    assert holds(["kunit", "yama_ptrace*"]) == (None, "it ran as `kunit`, not `kunit yama_ptrace*`")
    (ws.tree / "a.c").write_text("int edited;\n")           # edit of the kernel tree
    assert holds() == (None, "the tree changed since it ran (a.c)")


def test_skip_and_another_tree_are_not_passes(ws, capsys):
    recs = [{"stage": "a", "verdict": "skip", "passed": 0, "failed": 0, "skipped": 3,
             "seconds": 1, "tree": None}]
    assert runner.summarize(ws, recs, 1) == 1
    assert capsys.readouterr().out.endswith("0 passed, 1 failed\n")
    recs = [{"stage": "a", "verdict": "pass", "passed": 2, "failed": 0, "skipped": 0,
             "seconds": 1, "tree": "f" * 40}]
    assert runner.summarize(ws, recs, 1) == 1
    with Stage(ws, "unit", "all skipped") as st:
        st.skipped = 4
    assert results.read(ws.results, "unit")["verdict"] == "fail"


def test_a_tree_edited_during_the_run_fails_the_stage(ws):
    with Stage(ws, "unit", "x") as st:
        st.passed = 1
        (ws.tree / "a.c").write_text("int during;\n")
    assert results.read(ws.results, "unit")["verdict"] == "fail"


def test_test_tools_follows_pytest_s_exit_status(ws, tmp_path):
    """Every case passed but pytest exits non-zero: the stage fails."""
    import argparse
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "test_x.py").write_text("def test_ok():\n    pass\n")
    (tests / "conftest.py").write_text(
        "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 3\n")
    assert runner.test_tools(ws, argparse.Namespace(tests=str(tests), pytest_args=[])) == 1
    assert "exit 3" in results.read(ws.results, "test-tools")["summary"]


def test_every_module_imports_on_its_own():
    """No import cycle hides behind the order the command line imports in."""
    import subprocess
    import sys
    from pathlib import Path
    tools = Path(__file__).resolve().parents[2]
    for f in sorted((tools / "yws").glob("*.py")):
        if f.stem != "__main__":
            r = subprocess.run([sys.executable, "-c", "import yws." + f.stem], cwd=tools,
                               capture_output=True, text=True)
            assert r.returncode == 0, "yws.%s: %s" % (f.stem, r.stderr.strip()[-300:])


def test_a_stray_file_written_during_a_pipeline_leaves_it_green(ws, tmp_path, monkeypatch,
                                                                  capsys):
    """`make 2>&1 | tee make.log` in the workspace's top folder: the log
    grows while the stages run, and the later stage still finds the
    earlier one's result fresh (the posting's case), and a second run
    reuses both."""
    root = tmp_path / "wsroot"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "tool.py").write_text("x = 1\n")
    sh("git", "init", "-q", cwd=root)
    sh("git", "add", ".", cwd=root)
    sh("git", "-c", "user.name=T", "-c", "user.email=t@e.org", "commit", "-qm", "w", cwd=root)
    ws.root = root

    def fake(cmd, **kw):
        stage = cmd[cmd.index("--base") + 2]
        with open(root / "make.log", "a") as log:
            log.write("== %s\n" % stage)
        ok = stage == "a" or results.fresh(ws, "a", ["a"])[0] is not None
        with Stage(ws, stage, "fake", argv=[stage]) as st:
            st.passed, st.failed = int(ok), int(not ok)
        return 0 if ok else 1
    monkeypatch.setattr(runner, "spawn", fake)
    monkeypatch.setattr(runner, "REUSABLE", {"a", "b"})
    assert runner.pipeline(ws, [("a", []), ("b", [])]) == 0
    assert (root / "make.log").read_text() == "== a\n== b\n"
    assert runner.pipeline(ws, [("a", []), ("b", [])]) == 0
    assert capsys.readouterr().out.count("pass on this tree already") == 2


def test_make_review_runs_the_stages_in_the_review_s_own_workspace(ws, monkeypatch, capsys):
    """The runner, not the review stage, starts series-check, kunit and the
    selftests, with the review's tree and build folder; not after a failed review."""
    import argparse
    seen = []

    def fake(cmd, **kw):
        stage = cmd[cmd.index("--base") + 2]
        build = cmd[cmd.index("--build") + 1]
        seen.append((stage, build, cmd[cmd.index("--tree") + 1]))
        results.write(build + "/results", stage, verdict=verdict, passed=1,
                      failed=0, skipped=0, seconds=1, tree=None, dirty=False,
                      argv=[stage], workspace="w", summary="", details={})
        return 0
    monkeypatch.setattr(runner, "spawn", fake)
    verdict = "pass"
    assert runner.run_pipeline(ws, argparse.Namespace(pipeline="review", mbox="t.mbox", msgid=None,
                                                      rerun=False)) == 0
    review_top = str(ws.build / "review")
    assert seen == [("review", str(ws.build), str(ws.tree))] + [
        (s, review_top + "/build", review_top + "/author")
        for s in ("series-check", "kunit", "selftests")]
    seen.clear()
    verdict = "fail"
    assert runner.run_pipeline(ws, argparse.Namespace(pipeline="review", mbox="t.mbox", msgid=None,
                                                      rerun=False)) == 1
    assert [s[0] for s in seen] == ["review"]
