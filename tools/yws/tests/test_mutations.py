"""make mutations: patches go in and always come back out; verdicts come
from the stage's published result only."""
import difflib
import os
import subprocess
from pathlib import Path

import pytest

from yws import check_debug, mutations, results, runner
from yws.ws import StageError, Workspace

PATCH = """Must fail: suite.case_a suite.other*

--- a/rules.c
+++ b/rules.c
@@ -1,3 +1,3 @@
 a
-allow = check();
+allow = 1;
 b
"""
ORIG, MUT = "a\nallow = check();\nb\n", "a\nallow = 1;\nb\n"


def sh(cwd, *cmd):
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def ws(tmp_path):
    root, tree = tmp_path / "ws", tmp_path / "tree"
    for d in (root, tree):
        d.mkdir()
        sh(d, "git", "init", "-q")
    (tree / "rules.c").write_text(ORIG)
    sh(tree, "git", "add", ".")
    sh(tree, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (root / "kunit" / "mutations").mkdir(parents=True)
    (root / "kunit/mutations/allow-all.patch").write_text(PATCH)
    return Workspace(root=root, tree=tree)


def text(ws):
    return (ws.tree / "rules.c").read_text()


def test_must_fail_line_and_vfs_diff_default(ws, tmp_path):
    patch = ws.root / "kunit/mutations/allow-all.patch"
    assert mutations.must_fail(patch, "kunit") == ["suite.case_a", "suite.other*"]
    bare = tmp_path / "bare.patch"
    bare.write_text(PATCH.split("\n", 2)[2])
    assert mutations.must_fail(bare, "kunit") is None
    assert mutations.must_fail(bare, "vfs-diff") == ["yama_vfs_diff/*"]


def test_a_patch_that_does_not_apply_is_an_error(ws):
    (ws.tree / "rules.c").write_text("other\n")
    patch = ws.root / "kunit/mutations/allow-all.patch"
    res = mutations.prove(ws, patch, "kunit", [], ["x"], ws.dir("mutations"))
    assert res[0] == "error" and "patch failed" in res[1]
    assert text(ws) == "other\n"


LINES = ["line %d\n" % i for i in range(12)]


@pytest.fixture
def series(tmp_path):
    """Tag base and three commits, each changing lines of its own (1, 5, 9)."""
    t = tmp_path / "series"
    t.mkdir()
    sh(t, "git", "init", "-q")
    for i, n in enumerate([None, 1, 5, 9]):
        lines = (t / "f.c").read_text().splitlines(True) if n else LINES
        if n:
            lines[n] = "commit %d\n" % i
        (t / "f.c").write_text("".join(lines))
        sh(t, "git", "add", ".")
        sh(t, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c%d" % i)
    sh(t, "git", "tag", "base", "HEAD~3")
    return t


def folding(tmp_path, line, into="Into patch: 2\n"):
    """A series mutation: LINE of f.c, as commit 2 left it, planted."""
    old = LINES[:1] + ["commit 1\n"] + LINES[2:5] + ["commit 2\n"] + LINES[6:]
    new = old[:line] + ["planted\n"] + old[line + 1:]
    patch = tmp_path / "m.patch"
    patch.write_text("Must fail: patch 2/* build\n%s\n" % into +
                     "".join(difflib.unified_diff(old, new, "a/f.c", "b/f.c")))
    return patch


def show(tree, rev):
    return subprocess.run(["git", "-C", tree, "show", rev + ":f.c"], capture_output=True,
                          text=True, check=True).stdout.splitlines()


def test_fold_amends_commit_n_and_picks_the_later_ones(series, tmp_path):
    mutations.fold(series, folding(tmp_path, 7))
    log = subprocess.run(["git", "-C", series, "log", "--format=%s", "base..HEAD"],
                         capture_output=True, text=True).stdout.split()
    assert log == ["c3", "c2", "c1"]
    assert show(series, "HEAD~1")[5:8] == ["commit 2", "line 6", "planted"]
    assert show(series, "HEAD")[7:10] == ["planted", "line 8", "commit 3"]
    assert show(series, "HEAD~2")[7] == "line 7"


def test_fold_a_later_commit_does_not_apply_over_is_an_error(series, tmp_path):
    with pytest.raises(StageError, match="patch 3 does not apply"):
        mutations.fold(series, folding(tmp_path, 9))


def test_fold_needs_its_into_patch_line(series, tmp_path):
    head = subprocess.run(["git", "-C", series, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout
    with pytest.raises(StageError, match="no 'Into patch: N' line"):
        mutations.fold(series, folding(tmp_path, 7, into=""))
    with pytest.raises(StageError, match="no 'Into patch: N' line"):
        mutations.fold(series, folding(tmp_path, 7, into="Into patch: 4\n"))
    assert subprocess.run(["git", "-C", series, "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == head


def rec(verdict, bad=(), summary=""):
    return {"verdict": verdict, "passed": 3, "summary": summary,
            "details": {"failed_cases": [{"name": b, "reason": "x"} for b in bad]}}


def test_the_checkout_is_the_tree_as_it_is(ws):
    """HEAD, an uncommitted edit and a new file; a file left by an earlier
    mutation is gone; the developer's tree is not touched."""
    build = ws.build / "mutations"
    build.mkdir(parents=True)
    (ws.tree / "rules.c").write_text(ORIG + "edit();\n")
    (ws.tree / "new.c").write_text("new\n")
    dest = mutations.checkout(ws, build)
    assert (dest / "rules.c").read_text() == ORIG + "edit();\n"
    assert (dest / "new.c").read_text() == "new\n"
    (dest / "left-over.c").write_text("x\n")
    (dest / "rules.c").write_text(MUT)
    (ws.tree / "new.c").unlink()
    dest = mutations.checkout(ws, build)
    assert sorted(p.name for p in dest.iterdir() if p.name != ".git") == ["rules.c"]
    assert (dest / "rules.c").read_text() == ORIG + "edit();\n" == text(ws)


def test_judge():
    must = ["suite.case_a", "suite.other*"]
    assert mutations.judge(must, rec("fail", ["suite.other_b"]))[0] == "caught"
    assert mutations.judge(must, rec("fail", ["suite.case_b"]))[0] == "off-target"
    # selftests name a case scenario/program/test; a boot problem its scenario
    assert mutations.judge(["prog/t.x"], rec("fail", ["default/prog/t.x"]))[0] == "caught"
    assert mutations.judge(["yama_vfs_diff/*"], rec("fail", ["vfs-diff"]))[0] == "off-target"
    assert mutations.judge(must, rec("pass"))[0] == "missed"
    assert mutations.judge(must, rec("fail", summary="build failed"))[0] == "error"
    assert mutations.judge(must, None)[0] == "error"
    series = Path(mutations.__file__).parents[2] / "series/mutations"
    must = mutations.must_fail(next(series.glob("*.patch")), "series-check")
    assert must == ["patch 6/* build"]        # one glob: the case names hold spaces
    assert mutations.judge(must, rec("fail", ["patch 6/10 build"]))[0] == "caught"
    assert mutations.judge(must, rec("fail", ["patch 7/10 build"]))[0] == "off-target"


def test_every_planted_bug_says_what_must_fail():
    """The real folders: each has patches, each names what must fail; the
    stress ones what check-debug finds (check_debug.FOUND)."""
    found = mutations.mutations(Workspace())
    assert {s for _, s, _ in found} == {s for _, s, _ in mutations.FOLDERS}
    for patch, stage, _ in found:
        assert mutations.must_fail(patch, stage), patch
        if stage == "check-debug":
            assert mutations.must_fail(patch, stage) == check_debug.FOUND, patch


def fake_stage(ws, seen):
    """A runner.spawn that plays the stage: it publishes into --build's
    results a failed case when the tree allows all (the first patch), none else."""
    def spawn(cmd, log=None, timeout=None):
        build, stage = Path(cmd[cmd.index("--build") + 1]), cmd[cmd.index("--base") + 2]
        tree = Path(cmd[cmd.index("--tree") + 1])
        assert tree != ws.tree and text(ws) == ORIG     # the developer's tree: untouched
        mutated = (tree / "rules.c").read_text()
        seen.append((mutated, stage))
        bad = ["suite.case_a"] if "allow = 1" in mutated else []
        results.write(build / "results", stage, verdict="fail" if bad else "pass",
                      passed=1, failed=len(bad), skipped=0, seconds=1, tree="t",
                      dirty=True, argv=[], workspace="w", summary="",
                      details={"failed_cases": [{"name": b, "reason": ""} for b in bad]})
        return 1 if bad else 0
    return spawn


@pytest.mark.parametrize("names,rc,counts", [(["allow-all"], 0, (1, 0)), ([], 1, (1, 1))])
def test_stage_verdict(ws, monkeypatch, names, rc, counts):
    (ws.root / "kunit/mutations/b-ignored.patch").write_text(
        PATCH.split("@@ -1,3")[0] + "@@ -1,3 +1,3 @@\n a\n allow = check();\n-b\n+c\n")
    seen = []
    monkeypatch.setattr(runner, "spawn", fake_stage(ws, seen))
    assert mutations.main(ws, type("A", (), {"names": names})) == rc
    assert seen[0] == (MUT, "kunit")                     # ran on the patched tree
    assert text(ws) == ORIG
    r = results.read(ws.results, "mutations")
    assert (r["passed"], r["failed"]) == counts
    assert [c["name"] for c in r["details"]["failed_cases"]] == ["b-ignored"] * counts[1]
    assert results.read(ws.results, "kunit") is None     # main results untouched
    assert results.read(ws.build / "mutations/build/results", "kunit")


FAKE_KUNIT_PY = """import json, sys
js = [a[7:] for a in sys.argv if a.startswith("--json=")][0]
bad = "allow = 1" in open("rules.c").read()

case = {"name": "case_a", "status": "FAILURE" if bad else "PASS"}
json.dump({"name": "", "sub_groups": [{"name": "suite", "test_cases": [case]}]}, open(js, "w"))
sys.exit(int(bad))
"""


def test_end_to_end_through_python_m_yws(ws):
    """The real subprocess: python3 -m yws --build build/mutations kunit,
    with a fake kunit.py in the tree that fails on the mutated rule."""
    (ws.root / "tools").mkdir()
    (ws.root / "tools/yws").symlink_to(os.path.dirname(mutations.__file__))
    kpy = ws.tree / "tools/testing/kunit/kunit.py"
    kpy.parent.mkdir(parents=True)
    kpy.write_text(FAKE_KUNIT_PY)
    (ws.tree / "security/yama").mkdir(parents=True)
    (ws.tree / "security/yama/.kunitconfig").write_text("CONFIG_KUNIT=y\n")
    assert mutations.main(ws, type("A", (), {"names": []})) == 0
    r = results.read(ws.results, "mutations")
    assert r["details"]["mutations"][0]["result"] == "caught", r
    sub = results.read(ws.build / "mutations/build/results", "kunit")
    assert sub["details"]["failed_cases"] == [{"name": "suite.case_a", "reason": "FAILURE"}]
    assert results.read(ws.results, "kunit") is None and text(ws) == ORIG
