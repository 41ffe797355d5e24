"""b4prep, posting, mail: a tiny kernel-like tree made b4's prep branch,
posted with the real b4 0.12 (b4 send -o writes, never sends), proven."""
import argparse
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from yws import cover as CV, posting, prep, results, sender, thread as TH
from yws.ws import StageError, Workspace, git, git_env, tree_state, workspace_id

ROOT = Path(__file__).resolve().parents[3]
ME = "Ann Dev <ann@kernel.org>"
FIXES = "20261207-yama-fixes-0456"
LINK = "20261203-yama-lsm-test-0123"
FIXES_COVER = """yama: one fix

The fix stands alone.

@@TESTING@@

To: Kees Cook <kees@kernel.org>
Cc: linux-security-module@vger.kernel.org
"""
COVER = """security: Yama LSM: tiny
# a comment line, dropped

Intro.

@@BELOW@@

[[first change]] does one thing.

@@TESTING@@

@@CHANGES@@

To: linux-security-module@vger.kernel.org
Cc: bpf@vger.kernel.org
"""


def commit(tree, subject, line, body="Signed-off-by: " + ME):
    p = tree / "security" / "yama" / "y.c"
    p.write_text(p.read_text() + line + "\n")
    git(tree, "commit", "-qam", "%s\n\nWhy.\n\n%s" % (subject, body),
        env={"GIT_AUTHOR_NAME": "Ann Dev", "GIT_AUTHOR_EMAIL": "ann@kernel.org"})


def make_ws(tmp_path):
    """Two stacked series on a tiny tree: b4/yama-fixes (one patch), then
    b4/yama-lsm (two patches, RFC), as make prep builds them."""
    root, tree = tmp_path / "ws", tmp_path / "linux"
    for name, text in (("yama-fixes", FIXES_COVER), ("yama-lsm", COVER)):
        (root / "cover-letter" / name).mkdir(parents=True)
        (root / "cover-letter" / name / "cover.txt").write_text(text)
    git(tmp_path, "init", "-q", root)
    (root / ".gitignore").write_text("/build/\n/out/\n")
    (root / "series").mkdir()
    (root / "series" / "series").write_text("series yama-fixes %s\nseries yama-lsm %s RFC\n"
                                            % (FIXES, LINK))
    shutil.copy(ROOT / ".b4-config", root)
    (tree / "security" / "yama").mkdir(parents=True)
    (tree / "security" / "yama" / "y.c").write_text("int a;\n")
    git(tmp_path, "init", "-q", "-b", "base-import", tree)
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "base", env={"GIT_AUTHOR_NAME": "B", "GIT_AUTHOR_EMAIL": "b@x"})
    git(tree, "tag", "base")
    w = Workspace(root, tree=tree, series=root / "series", sender=ME)
    prep.configure(w, tree)
    prep.enroll(w, tree, "yama-fixes", FIXES, [])
    commit(tree, "yama: fix one", "int f;")
    commit(tree, "yama: fix two", "int g;")
    prep.enroll(w, tree, "yama-lsm", LINK, ["RFC"])
    commit(tree, "yama: first change", "int b;")
    commit(tree, "yama: second change", "int c;")
    return w


@pytest.fixture
def ws(tmp_path):
    return make_ws(tmp_path)


@pytest.fixture(scope="module")
def posted_once(tmp_path_factory):
    """A workspace whose tree is posted as v1 (b4 is slow to start: once)."""
    w = make_ws(tmp_path_factory.mktemp("posted"))
    fake_results(w)
    assert post(w) == 0
    return w


@pytest.fixture
def posted(posted_once, tmp_path):
    """A copy of it of the test's own."""
    src = posted_once.root.parent
    shutil.copytree(src, tmp_path / "c", symlinks=True)
    c = tmp_path / "c"
    return Workspace(c / "ws", tree=c / "linux", series=c / "ws" / "series", sender=ME)


def fake_results(ws, stages=("series-check", "kunit", "selftests"), tree=None):
    tid = tree or tree_state(ws.tree)[0]
    for s in stages:
        results.write(ws.results, s, verdict="pass", passed=3, failed=0, skipped=0,
                      seconds=5, tree=tid, dirty=False, argv=[s],
                      workspace=workspace_id(ws), summary="%s all good" % s,
                      details={"scenarios": {"default": {}}} if s == "selftests" else {})
    return tid


def post(ws, **kw):
    return posting.stage_posting(ws, argparse.Namespace(rerun=False, **kw))


def test_prep_makes_stacked_b4_prep_branches(ws):
    assert git(ws.tree, "symbolic-ref", "--short", "HEAD") == "b4/yama-lsm"
    lay = prep.layout(ws.tree)
    assert [(t["change-id"], t["prefixes"], len(c)) for _, t, c in lay] == [
        (FIXES, [], 2), (LINK, ["RFC"], 2)]
    assert git(ws.tree, "rev-parse", "b4/yama-fixes") == lay[0][2][-1]
    for branch in ("b4/yama-fixes", "b4/yama-lsm"):
        git(ws.tree, "checkout", "-q", branch)
        out = subprocess.run(["b4", "prep", "--show-info"], cwd=ws.tree,
                             capture_output=True, text=True)
        assert "change-id: %s" % (FIXES if "fixes" in branch else LINK) in out.stdout
    assert git(ws.tree, "config", "sendemail.smtpserver") == "/bin/false"
    assert not tree_state(ws.tree)[1], ".b4-config must not make the tree dirty"


def test_export_then_build_gives_the_same_stack(ws, tmp_path):
    prep.export_to(ws, ws.series)
    lines = (ws.series / "series").read_text().splitlines()
    assert lines[1:] == ["series yama-fixes " + FIXES, "0001-yama-fix-one.patch",
                         "0002-yama-fix-two.patch", "series yama-lsm %s RFC" % LINK,
                         "0003-yama-first-change.patch", "0004-yama-second-change.patch"]
    tid = tree_state(ws.tree)[0]
    assert prep.build(ws, ws.tree) == 4
    assert tree_state(ws.tree)[0] == tid and prep.export_differs(ws)[0] == []
    assert [t["change-id"] for _, t, _ in prep.layout(ws.tree)] == [FIXES, LINK]


def test_posting_stops_naming_stale_stages(ws, capsys):
    fake_results(ws, ("series-check",))
    fake_results(ws, ("kunit",), tree="0" * 40)
    assert post(ws) == 1
    why = results.read(ws.results, "posting")["summary"]
    assert "kunit (the tree changed since it ran (0000000" in why and "selftests (no result)" in why
    assert "series-check" not in why.split("run make")[1]
    assert not (ws.out / "posting").exists()


def test_posting_refuses_an_uncommitted_edit(ws):
    fake_results(ws)
    (ws.tree / "security" / "yama" / "y.c").write_text("edited\n")
    assert post(ws) == 1
    assert "uncommitted edits (security/yama/y.c)" in results.read(ws.results, "posting")["summary"]


def test_an_edit_makes_the_results_stale(ws):
    fake_results(ws)
    commit(ws.tree, "yama: third change", "int d;")
    assert post(ws) == 1
    why = results.read(ws.results, "posting")["summary"]
    assert "kunit (the tree changed since it ran (security/yama/y.c))" in why


def test_posting_is_b4_send_and_proven(posted):
    ws, tid = posted, tree_state(posted.tree)[0]
    v1, fx = ws.out / "posting" / "yama-lsm" / "v1", ws.out / "posting" / "yama-fixes" / "v1"
    assert sorted(p.name for p in v1.glob("*.eml"))[0].startswith("0000-")
    thread, fixes = posting.thread_of(v1 / "thread.mbox"), posting.thread_of(fx / "thread.mbox")
    assert [p[0] for p in thread] == [0, 1, 2] and [p[0] for p in fixes] == [0, 1, 2]
    cover = TH.text(thread[0][4])
    assert "every result below is of tree %s" % tid[:12] in cover
    assert "1/2 does one thing." in cover and "kunit all good" in " ".join(cover.split())
    assert "bpf@vger.kernel.org" in thread[0][4]["Cc"]
    assert str(thread[0][4]["Subject"]).startswith("[RFC PATCH 0/2] security: Yama LSM")
    assert str(fixes[0][4]["Subject"]).startswith("[PATCH 0/2] yama: one fix")
    assert "Kees Cook <kees@kernel.org>" in fixes[0][4]["To"]
    fmsgid = fixes[0][4]["Message-ID"].strip("<>")
    assert posting.PREREQ.findall(cover) == [fmsgid] and "yama: one fix" in cover
    assert fmsgid not in thread[0][4]["Cc"], "b4 took it for an address once"
    rec = results.read(ws.results, "posting")
    assert rec["verdict"] == "pass" and rec["tree"] == tid and rec["details"]["sendable"]
    assert [d["name"] for d in rec["details"]["series"]] == ["yama-fixes", "yama-lsm"]
    assert "yama-fixes/v1 + yama-lsm/v1" in (v1 / "proof.txt").read_text()
    assert "= tree %s" % tid[:12] in (v1 / "proof.txt").read_text()
    assert "= tree %s" % git(ws.tree, "rev-parse", "b4/yama-fixes^{tree}")[:12] in (
        fx / "proof.txt").read_text()


def test_the_proof_fails_when_the_thread_gives_another_tree(posted, tmp_path):
    ws, tid = posted, tree_state(posted.tree)[0]
    thread = ws.out / "posting" / "yama-fixes" / "v1" / "thread.mbox"
    with pytest.raises(StageError, match="gives tree"):
        posting.proof(ws, [thread], "f" * 40, tmp_path / "w")


def test_a_placeholder_sender_posts_with_a_warning_last(ws, capsys):
    ws.sender = "Seed <maintainers@users.noreply.a-seed.example>"
    assert post(ws) == 1  # (stale results: stops early, the warning still comes last)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("WARNING:") and "NOT sendable" in "\n".join(out[-9:])
    checks = posting.lint(thread_of_tree(ws), 1, sender.identity(ws))
    assert checks[-1][:2] == ("sender", "warn") and "NOT SENDABLE" in checks[-1][2]


@pytest.mark.parametrize("addr, bad", [
    ("ann@kernel.org", False), ("x@users.noreply.github.com", True), ("a@b.example", True),
    ("a@host.invalid", True), ("a@x.test", True), ("a@localhost", True),
    ("a@example.com", True), ("yama-dev@example.org", True), ("no-reply@kernel.org", True)])
def test_placeholder_identities(addr, bad):
    assert bool(sender.placeholder_reasons(addr)) == bad


def test_identity_sender_then_git_then_placeholder(ws, monkeypatch):
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    assert sender.identity(ws)[:2] == ("Ann Dev", "ann@kernel.org")
    ws.sender = None
    assert sender.identity(ws)[2] == "placeholder"
    git(ws.root, "config", "user.name", "G")
    git(ws.root, "config", "user.email", "g@kernel.org")
    assert sender.identity(ws) == ("G", "g@kernel.org", "git")
    ws.sender = "no angle brackets"
    with pytest.raises(StageError):
        sender.identity(ws)


def thread_of_tree(ws):
    """The tree's series as a thread, by git format-patch (no b4: fast)."""
    mbox = ws.root / "fp.mbox"
    mbox.write_text(git(ws.tree, "format-patch", "--stdout", "--thread", "--cover-letter",
                        "--to=" + posting.LSM_LIST, "--cc=bpf@vger.kernel.org",
                        "base..HEAD") + "\n")
    return posting.thread_of(mbox)


def test_lint_names_each_problem(ws):
    commit(ws.tree, "yama: fix it", "int e;",
           "Fixes: 389da25f93e (\"Yama: add\")\nSigned-off-by: Other <o@kernel.org>")
    thread = thread_of_tree(ws)
    lint = {c[0]: c for c in posting.lint(thread, 1, cover_text="Cc: x@kernel.org\n")}
    assert lint["trailers"][1] == "fail" and "does not sign off" in lint["trailers"][2]
    assert "Fixes: 389da25f93e" in lint["trailers"][2]
    assert lint["recipients"][1] == "fail" and "x@kernel.org" in lint["recipients"][2]
    assert lint["headers"][1] == "pass"
    assert "*** SUBJECT HERE ***" in str(thread[0][4]["Subject"])


def test_lint_wants_a_changelog_from_v2_on(posted):
    ws = posted
    thread = posting.thread_of(ws.out / "posting" / "yama-lsm" / "v1" / "thread.mbox")
    names = {c[0]: c[1] for c in posting.lint(thread, 2)}
    assert names["changelog"] == "fail" and names["editme"] == "pass"


def test_refs_name_one_patch():
    subjects = ["yama: read ptrace_scope once", "yama: refuse hardlinks", "yama: refuse"]
    assert posting.resolve_refs("[[hardlinks]] and [[yama: refuse]]", subjects) == "2/3 and 3/3"
    with pytest.raises(StageError, match="several"):
        posting.resolve_refs("[[refuse]]", subjects)
    with pytest.raises(StageError, match="none"):
        posting.resolve_refs("[[kunit]]", subjects)


def test_record_then_v2_with_changelog_and_range_diff(posted, monkeypatch):
    """Also on a machine whose user has no git identity (b4 diff commits)."""
    ws = posted
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    assert [posting.record(ws, d) for d in posting.unposted(ws)]
    cl = ws.root / "cover-letter" / "yama-lsm"
    assert (cl / "posted" / "v1.mbox").exists() and (cl / "posted" / "v1.tree").exists()
    assert (ws.root / "cover-letter" / "yama-fixes" / "posted" / "v1.mbox").exists()
    assert (cl / "changes" / "v2.txt").read_text().startswith("- No change since v1")
    assert CV.current_revision(ws, "yama-lsm", tree_state(ws.tree)[0]) == 1
    commit(ws.tree, "yama: third change", "int d;")
    fake_results(ws)
    assert post(ws) == 1, "a changed series with the 'No change' stub must stop"
    (cl / "changes" / "v2.txt").write_text("- Added [[third change]].\n")
    assert post(ws) == 0
    v2 = ws.out / "posting" / "yama-lsm" / "v2"
    cover = TH.text(posting.thread_of(v2 / "thread.mbox")[0][4])
    assert "Changes in v2:\n- Added 3/3." in cover and "Link to v1: https://lore" in cover
    fixes_v1 = posting.cover_msgid(ws.root / "cover-letter" / "yama-fixes" / "posted" / "v1.mbox")
    assert posting.PREREQ.findall(cover) == [fixes_v1], "v2 names the fixes as sent"
    assert "yama: third change" in (v2 / "range-diff-v1.txt").read_text()


def test_an_edit_made_with_b4_prep_edit_cover_is_refused_not_lost(posted, tmp_path):
    ws = posted
    editor = tmp_path / "editor"
    editor.write_text("#!/bin/sh\necho 'My own line.' >> \"$1\"\n")
    editor.chmod(0o755)
    subprocess.run(["b4", "prep", "--edit-cover"], cwd=ws.tree, check=True, capture_output=True,
                   env={**os.environ, **git_env([("core.editor", str(editor))])}, timeout=60)
    fake_results(ws)
    assert post(ws) == 1
    why = results.read(ws.results, "posting")["summary"]
    assert "b4/yama-lsm was edited after the posting wrote it" in why
    assert "cover-letter/yama-lsm/cover.txt" in why
    assert "My own line." in posting.cover_message(ws.tree), "the edit is still there"
