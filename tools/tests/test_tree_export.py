"""Tests of the workspace's tree and export stages.

One fresh extraction of the base package (module fixture `fresh`) serves the
tests of the real base and series: the base commit id must equal the
recorded one, and make tree followed by make export must give back series/
byte for byte. The rules of make tree itself (a patch that does not apply is
named, unexported commits and uncommitted edits are never discarded,
unchanged files keep their timestamps) are tested on a tiny base with a
two-patch series (`tiny`), in seconds instead of a kernel tree's minute.
"""
import os
import shutil
import subprocess
import pathlib

import pytest

WS = pathlib.Path(os.environ["WS"])  # conftest.py
BASE = os.environ.get("BASE", "linux-source-6.12")


def run(cmd, env_extra, check=True):
    env = dict(os.environ, **env_extra)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A fresh extraction of the base with series/ applied, in a temp dir."""
    top = tmp_path_factory.mktemp("fresh")
    env = {"BUILD": str(top), "TREE": str(top / "linux"),
           "SERIES_DIR": str(WS / "series")}
    proc = run([str(WS / "tools/tree")], env)
    yield top, env, proc
    shutil.rmtree(top, ignore_errors=True)


def recorded_base():
    line = (WS / "tools/bases" / f"{BASE}.id").read_text().split()
    return line[0], line[1]


def test_base_id_is_the_recorded_one(fresh):
    top, _env, proc = fresh
    version, expected = recorded_base()
    installed = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", BASE], capture_output=True,
        text=True).stdout
    if installed != version:
        pytest.skip(f"{BASE} is {installed}, the recorded id is for {version}")
    assert f"base commit: {expected}" in proc.stdout
    assert git(top / "linux", "rev-parse", "base") == expected


def test_base_commit_is_pristine(fresh):
    top, _env, _proc = fresh
    tree = top / "linux"
    # The base commit holds every file of the tarball, .gitignore'd or not.
    assert git(tree, "ls-tree", "base", "--name-only", "Makefile") == "Makefile"
    assert git(tree, "log", "-1", "--format=%an|%cn|%ad", "--date=unix",
               "base").endswith("|1277078400")


def test_tree_then_export_changes_no_byte(fresh, tmp_path):
    top, env, _proc = fresh
    copy = tmp_path / "series"
    shutil.copytree(WS / "series", copy)
    run([str(WS / "tools/export")], dict(env, SERIES_DIR=str(copy)))
    diff = subprocess.run(["diff", "-r", str(WS / "series"), str(copy)],
                          capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout


def write_patch(path, subject, body):
    path.write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Test <test@example.org>\n"
        "Date: Mon, 1 Jan 2024 00:00:00 +0000\n"
        f"Subject: [PATCH] {subject}\n\n{subject}.\n---\n{body}")


GOOD = """diff --git a/yama-test-file b/yama-test-file
new file mode 100644
--- /dev/null
+++ b/yama-test-file
@@ -0,0 +1 @@
+hello
"""

BAD = """diff --git a/security/yama/yama_lsm.c b/security/yama/yama_lsm.c
--- a/security/yama/yama_lsm.c
+++ b/security/yama/yama_lsm.c
@@ -1,3 +1,3 @@
 // this context line is not in the file
-static int ptrace_scope = 0;
+static int ptrace_scope = 2;
 
"""


def test_failing_patch_is_named_and_tree_kept(tiny, tmp_path):
    top, env, _proc = tiny
    series = tmp_path / "bad-series"
    series.mkdir()
    write_patch(series / "0001-good.patch", "add a file", GOOD)
    write_patch(series / "0002-bad.patch", "change a missing line", BAD)
    (series / "series").write_text("0001-good.patch\n0002-bad.patch\n")
    proc = run([str(WS / "tools/tree")],
               dict(env, SERIES_DIR=str(series), FORCE="1"), check=False)
    assert proc.returncode != 0
    assert "0002-bad.patch" in proc.stderr
    assert "security/yama/yama_lsm.c" in proc.stderr
    tree = top / "linux"
    assert git(tree, "log", "-1", "--format=%s") == "add a file"
    assert not (tree / ".git" / "rebase-apply").exists()
    assert git(tree, "status", "--porcelain", "--untracked-files=no") == ""


def test_unexported_commits_are_not_discarded(tiny, tmp_path):
    top, env, _proc = tiny
    tree = top / "linux"
    run([str(WS / "tools/tree")], dict(env, FORCE="1"))
    (tree / "yama-local").write_text("work in progress\n")
    git(tree, "add", "-f", "yama-local")
    git(tree, "-c", "user.name=T", "-c", "user.email=t@example.org",
        "commit", "-qm", "local work")
    head = git(tree, "rev-parse", "HEAD")
    # series/ did not change: the tree is kept as it is, commit included.
    proc = run([str(WS / "tools/tree")], env)
    assert "tree kept as it is" in proc.stdout
    assert git(tree, "rev-parse", "HEAD") == head
    # Asked to apply series/ again: refused, nothing lost.
    proc = run([str(WS / "tools/tree")], dict(env, REAPPLY="1"), check=False)
    assert proc.returncode != 0
    assert "not exported" in proc.stderr
    assert git(tree, "rev-parse", "HEAD") == head


def test_uncommitted_edits_are_tested_not_discarded(tiny, tmp_path):
    """The developer's loop: an uncommitted edit stays through make tree
    while series/ is unchanged; when series/ changed, make tree refuses to
    apply it over the edit."""
    top, env, _proc = tiny
    tree = top / "linux"
    run([str(WS / "tools/tree")], dict(env, FORCE="1"))
    target = tree / "security" / "yama" / "yama_lsm.c"
    edited = target.read_bytes() + b"\n/* work in progress */\n"
    target.write_bytes(edited)
    proc = run([str(WS / "tools/tree")], env)
    assert "1 file(s) with uncommitted edits" in proc.stdout
    assert target.read_bytes() == edited
    # series/ changes (one patch fewer): applying it would discard the edit.
    series = tmp_path / "shorter"
    shutil.copytree(env["SERIES_DIR"], series)
    lines = [l for l in (series / "series").read_text().splitlines()
             if l and not l.startswith("#")]
    (series / "series").write_text("\n".join(lines[:-1]) + "\n")
    proc = run([str(WS / "tools/tree")], dict(env, SERIES_DIR=str(series)),
               check=False)
    assert proc.returncode != 0
    assert "uncommitted changes" in proc.stderr
    assert target.read_bytes() == edited
    run([str(WS / "tools/tree")], dict(env, FORCE="1"))
    assert target.read_bytes() != edited


def test_reapply_keeps_timestamps_of_unchanged_files(tiny):
    """make tree re-applies series/; files whose content it gives back
    unchanged keep their mtime (else every build folder rebuilds whatever
    includes them), a file whose uncommitted edit FORCE=1 discards does not."""
    top, env, _proc = tiny
    tree = top / "linux"
    run([str(WS / "tools/tree")], dict(env, FORCE="1"))
    files = [f for f in git(tree, "diff", "--name-only", "base", "HEAD").split("\n") if f]
    assert files, "the series touches no file"
    old = 1_000_000_000 * 10**9
    for f in files:
        os.utime(tree / f, ns=(old, old))
    run([str(WS / "tools/tree")], dict(env, REAPPLY="1"))
    assert {f: (tree / f).stat().st_mtime_ns for f in files} == {f: old for f in files}
    edited = tree / files[0]
    committed = edited.read_bytes()
    edited.write_bytes(committed + b"\n/* uncommitted */\n")
    os.utime(edited, ns=(old + 10**9, old + 10**9))
    run([str(WS / "tools/tree")], dict(env, FORCE="1"))
    assert edited.read_bytes() == committed
    assert edited.stat().st_mtime_ns > old + 10**9
    for f in files[1:]:
        assert (tree / f).stat().st_mtime_ns == old, f


def fixture_base(tmp_path):
    """The tiny base of tools/tests/fixtures/base as a package: its tarball
    and the BASE_CONF that names it."""
    fix = WS / "tools/tests/fixtures/base"
    shutil.copytree(fix, tmp_path / "src/fixture-base")
    tar = tmp_path / "base.tar.xz"
    subprocess.run(["tar", "-cJf", str(tar), "-C", str(tmp_path / "src"),
                    "fixture-base"], check=True)
    conf = tmp_path / "fixture.conf"
    conf.write_text("BASE_PACKAGE=fixture-base\nBASE_TARBALL=%s\n"
                    "BASE_TOPDIR=fixture-base\nBASE_IDENTITY_NAME=Fixture\n"
                    "BASE_IDENTITY_EMAIL=fixture@localhost\n"
                    "BASE_DATE=2010-06-21T00:00:00+00:00\n" % tar)
    return conf


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tree of the tiny base with a two-patch series (one patch edits
    security/yama/yama_lsm.c, one adds a file): what make tree's rules for
    edits, commits and timestamps need, without the kernel's 90,000 files."""
    top = tmp_path_factory.mktemp("tiny")
    conf = fixture_base(top)
    mk = top / "mk"
    shutil.copytree(top / "src/fixture-base", mk)
    ident = ["-c", "user.name=T", "-c", "user.email=t@example.org"]
    git(mk, "init", "-q")
    git(mk, "add", "-A")
    git(mk, *ident, "commit", "-qm", "base")
    lsm = mk / "security/yama/yama_lsm.c"
    lsm.write_text(lsm.read_text() + "\n/* the series' change */\n")
    git(mk, *ident, "commit", "-qam", "yama: a change")
    (mk / "yama-test-file").write_text("hello\n")
    git(mk, "add", "yama-test-file")
    git(mk, *ident, "commit", "-qm", "add a file")
    series = top / "series"
    git(mk, "format-patch", "-q", "-o", str(series), "HEAD~2")
    (series / "series").write_text(
        "\n".join(sorted(p.name for p in series.glob("*.patch"))) + "\n")
    env = {"BASE": "fixture", "BASE_CONF": str(conf), "BUILD": str(top / "build"),
           "TREE": str(top / "build/linux"), "SERIES_DIR": str(series),
           "BASE_CACHE": str(top / "cache")}
    proc = run([str(WS / "tools/tree")], env)
    return top / "build", env, proc


def test_base_is_extracted_once_then_cloned(tmp_path):
    """The second tree of a base is a clone of the first extraction
    (BASE_CACHE), with the same base commit; a tiny fixture base."""
    fix = WS / "tools/tests/fixtures/base"
    conf = fixture_base(tmp_path)
    empty = tmp_path / "series"
    empty.mkdir()
    (empty / "series").write_text("")
    trees = []
    for n in (1, 2):
        top = tmp_path / ("build%d" % n)
        env = {"BASE": "fixture", "BASE_CONF": str(conf), "BUILD": str(top),
               "TREE": str(top / "linux"), "SERIES_DIR": str(empty),
               "BASE_CACHE": str(tmp_path / "cache")}
        proc = run([str(WS / "tools/tree")], env)
        trees.append((top / "linux", proc.stdout))
    (first, out1), (second, out2) = trees
    assert "extracting" in out1 and "kept the base in" in out1
    assert "extracting" not in out2 and "cloning the base from" in out2
    assert git(first, "rev-parse", "base") == git(second, "rev-parse", "base")
    assert git(second, "status", "--porcelain") == ""
    assert git(second, "rev-parse", "--abbrev-ref", "HEAD") == "yama"
    assert git(second, "remote") == ""
    # A file of the base, checked out.
    some = next(p for p in fix.rglob("*") if p.is_file())
    assert (second / some.relative_to(fix)).read_bytes() == some.read_bytes()
