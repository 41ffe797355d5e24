"""Tests of tools/tree, tools/export and tools/round-trip on a tiny base with
a two-patch series (`tiny`): seconds instead of a kernel tree's minute.
make check runs the same checks of the base id and the round trip on the
real base and series (its tree and round-trip stages).
"""
import os
import pathlib
import shutil
import subprocess

import pytest

WS = pathlib.Path(os.environ["WS"])  # conftest.py
FIX = WS / "tools/tests/fixtures/base"
IDENT = ["-c", "user.name=T", "-c", "user.email=t@example.org"]


def run(tool, env, check=True, **extra):
    """tools/TOOL with env and extra added to the environment."""
    proc = subprocess.run([str(WS / "tools" / tool)], env={**os.environ, **env, **extra},
                          capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{tool} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def git(tree, *args):
    return subprocess.run(["git", "-C", str(tree), *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(tree, name, text, subject):
    """A developer's commit that adds the file name."""
    (tree / name).write_text(text)
    git(tree, "add", "-f", name)
    git(tree, *IDENT, "commit", "-qm", subject)


def pack(top):
    subprocess.run(["tar", "-cJf", str(top / "base.tar.xz"), "-C", str(top / "src"),
                    "fixture-base"], check=True)


def at(env, build):
    """env with its tree in the build folder build."""
    return dict(env, BUILD=str(build), TREE=str(build / "linux"))


def base_env(top, version=None, cache="off"):
    """tools/tree's environment for the tiny base of fixtures/base, packaged
    in top (BASE_VERSION: the installed version that tools/tree compares
    with the recorded one, fixture.id), an empty series/, BUILD top/b."""
    shutil.copytree(FIX, top / "src/fixture-base")
    pack(top)
    conf = top / "fixture.conf"
    conf.write_text("BASE_PACKAGE=fixture-base\nBASE_TARBALL=%s\n"
                    "BASE_TOPDIR=fixture-base\nBASE_IDENTITY_NAME=Fixture\n"
                    "BASE_IDENTITY_EMAIL=fixture@localhost\n"
                    "BASE_DATE=2010-06-21T00:00:00+00:00\n" % (top / "base.tar.xz")
                    + ("BASE_VERSION=%s\n" % version if version else ""))
    (top / "series").mkdir()
    (top / "series/series").write_text("")
    return at({"BASE": "fixture", "BASE_CONF": str(conf), "SERIES_DIR": str(top / "series"),
               "BASE_CACHE": str(cache)}, top / "b")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(build folder, env) of a tree of the tiny base with a two-patch series
    (one patch edits security/yama/yama_lsm.c, one adds a file), made as a
    developer makes one: make tree of the base, two commits, make export,
    then make tree applies the exported series/ again."""
    top = tmp_path_factory.mktemp("tiny")
    env = base_env(top, cache=top / "cache")
    run("tree", env)
    tree = top / "b/linux"
    lsm = tree / "security/yama/yama_lsm.c"
    lsm.write_text(lsm.read_text() + "\n/* the series' change */\n")
    git(tree, *IDENT, "commit", "-qam", "yama: a change")
    commit(tree, "yama-test-file", "hello\n", "add a file")
    run("export", env)
    run("tree", env, REAPPLY="1")
    return top / "b", env


# A patch whose context is not in the file: git am fails on it.
BAD = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test <test@example.org>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH] change a missing line

---
diff --git a/security/yama/yama_lsm.c b/security/yama/yama_lsm.c
--- a/security/yama/yama_lsm.c
+++ b/security/yama/yama_lsm.c
@@ -1,3 +1,3 @@
 // this context line is not in the file
-static int ptrace_scope = 0;
+static int ptrace_scope = 2;
 
"""


def test_failing_patch_is_named_and_tree_kept(tiny, tmp_path):
    build, env = tiny
    series = tmp_path / "bad-series"
    shutil.copytree(env["SERIES_DIR"], series)
    (series / "0003-bad.patch").write_text(BAD)
    with open(series / "series", "a") as order:
        order.write("0003-bad.patch\n")
    proc = run("tree", env, check=False, SERIES_DIR=str(series), FORCE="1")
    assert proc.returncode != 0
    assert "0003-bad.patch" in proc.stderr
    assert "security/yama/yama_lsm.c" in proc.stderr
    tree = build / "linux"
    assert git(tree, "log", "-1", "--format=%s") == "add a file"
    assert not (tree / ".git" / "rebase-apply").exists()
    assert git(tree, "status", "--porcelain", "--untracked-files=no") == ""


def test_unexported_commits_are_not_discarded(tiny):
    build, env = tiny
    tree = build / "linux"
    run("tree", env, FORCE="1")
    commit(tree, "yama-local", "work in progress\n", "local work")
    head = git(tree, "rev-parse", "HEAD")
    # series/ did not change: the tree is kept as it is, commit included.
    assert "tree kept as it is" in run("tree", env).stdout
    assert git(tree, "rev-parse", "HEAD") == head
    # Asked to apply series/ again: refused, nothing lost.
    proc = run("tree", env, check=False, REAPPLY="1")
    assert proc.returncode != 0 and "not exported" in proc.stderr
    assert git(tree, "rev-parse", "HEAD") == head


def test_uncommitted_edits_are_tested_not_discarded(tiny, tmp_path):
    """The developer's loop: an uncommitted edit stays through make tree
    while series/ is unchanged; when series/ changed, make tree refuses to
    apply it over the edit."""
    build, env = tiny
    run("tree", env, FORCE="1")
    target = build / "linux/security/yama/yama_lsm.c"
    edited = target.read_bytes() + b"\n/* work in progress */\n"
    target.write_bytes(edited)
    assert "1 file(s) with uncommitted edits" in run("tree", env).stdout
    assert target.read_bytes() == edited
    # series/ changes (one patch fewer): applying it would discard the edit.
    series = tmp_path / "shorter"
    shutil.copytree(env["SERIES_DIR"], series)
    lines = [l for l in (series / "series").read_text().splitlines()
             if l and not l.startswith("#")]
    (series / "series").write_text("\n".join(lines[:-1]) + "\n")
    proc = run("tree", env, check=False, SERIES_DIR=str(series))
    assert proc.returncode != 0 and "uncommitted changes" in proc.stderr
    assert target.read_bytes() == edited
    run("tree", env, FORCE="1")
    assert target.read_bytes() != edited


def test_reapply_keeps_timestamps_of_unchanged_files(tiny):
    """make tree re-applies series/; files whose content it gives back
    unchanged keep their mtime (else every build folder rebuilds whatever
    includes them), a file whose uncommitted edit FORCE=1 discards does not."""
    build, env = tiny
    tree = build / "linux"
    run("tree", env, FORCE="1")
    files = [f for f in git(tree, "diff", "--name-only", "base", "HEAD").split("\n") if f]
    assert files, "the series touches no file"
    old = 1_000_000_000 * 10**9
    for f in files:
        os.utime(tree / f, ns=(old, old))
    run("tree", env, REAPPLY="1")
    assert {f: (tree / f).stat().st_mtime_ns for f in files} == {f: old for f in files}
    edited = tree / files[0]
    committed = edited.read_bytes()
    edited.write_bytes(committed + b"\n/* uncommitted */\n")
    os.utime(edited, ns=(old + 10**9, old + 10**9))
    run("tree", env, FORCE="1")
    assert edited.read_bytes() == committed
    assert edited.stat().st_mtime_ns > old + 10**9
    for f in files[1:]:
        assert (tree / f).stat().st_mtime_ns == old, f


def test_export_round_trip_is_checked(tiny, tmp_path):
    """make round-trip: series/ must be what make export writes from the
    commit series/ was synchronised with, byte for byte. A patch export
    would rewrite (here: a mail client's signature) or a rewritten order
    file fails, named, and nothing is written; commits made in the tree
    afterwards (not exported yet) neither count nor hide the failure."""
    build, env = tiny
    tree = build / "linux"
    assert "(2 patches on base)" in run("tree", env, FORCE="1").stdout
    proc = run("round-trip", env)
    assert "writes the 2 patches and the order of series/ byte for byte" in proc.stdout
    assert "== round-trip: pass (1 passed, 0 failed)" in proc.stdout
    signed = tmp_path / "signed"
    shutil.copytree(env["SERIES_DIR"], signed)
    first = sorted(signed.glob("*.patch"))[0]
    first.write_text(first.read_text() + "-- \n2.39.5\n\n")
    assert "(2 patches on base)" in run("tree", env, SERIES_DIR=str(signed)).stdout
    proc = run("round-trip", env, check=False, SERIES_DIR=str(signed))
    assert proc.returncode != 0
    assert "make export would change series/: %s" % first.name in proc.stderr
    assert (build / "results/round-trip.verdict").read_text().split("\t")[1:4] == [
        "fail", "0", "1"]
    assert first.read_text().endswith("2.39.5\n\n")      # nothing written
    # A commit not exported yet: the check is of the synchronised commit.
    commit(tree, "wip", "work in progress\n", "work in progress")
    proc = run("round-trip", env, check=False, SERIES_DIR=str(signed))
    assert proc.returncode != 0 and first.name in proc.stderr
    assert run("round-trip", env, check=False, SERIES_DIR=str(signed)).returncode != 0
    # The order file, byte for byte (a comment of its own is rewritten).
    order = tmp_path / "order"
    shutil.copytree(env["SERIES_DIR"], order)
    names = sorted(p.name for p in order.glob("*.patch"))
    (order / "series").write_text("# mine\n" + "\n".join(names) + "\n")
    git(tree, "reset", "-q", "--hard", "HEAD~1")
    run("tree", env, SERIES_DIR=str(order), FORCE="1")
    proc = run("round-trip", env, check=False, SERIES_DIR=str(order))
    assert proc.returncode != 0 and "would change series/: series" in proc.stderr
    # series/ changed after the tree took it: make tree first.
    run("tree", env, FORCE="1")
    proc = run("round-trip", env, check=False, SERIES_DIR=str(order))
    assert proc.returncode != 0 and "run make tree first" in proc.stdout


def test_base_id_is_checked_against_the_recorded_one(tmp_path):
    """The base commit of the installed version must be the recorded one
    (tools/bases/BASE.id: "VERSION ID"); for another version the id is
    reported, not checked; with no record, nothing is checked."""
    env = base_env(tmp_path, "1.0-1")
    proc = run("tree", env)
    made = git(tmp_path / "b/linux", "rev-parse", "base")
    assert "base commit: %s" % made in proc.stdout
    assert "recorded" not in proc.stdout + proc.stderr
    record = pathlib.Path(env["BASE_CONF"]).with_suffix(".id")
    record.write_text("1.0-1 %s\n" % made)
    proc = run("tree", env, FORCE="1")
    assert "base commit is the recorded one for fixture-base 1.0-1" in proc.stdout
    record.write_text("1.0-1 %s\n" % ("0" * 40))
    proc = run("tree", env, check=False, FORCE="1")
    assert proc.returncode != 0
    assert "differs from the recorded %s" % ("0" * 40) in proc.stderr
    assert made in proc.stderr
    record.write_text("0.9-1 %s\n" % ("0" * 40))
    proc = run("tree", env, FORCE="1")
    assert "not checked" in proc.stderr and "installed: 1.0-1" in proc.stderr


def test_base_commit_is_pristine(tmp_path):
    """The base commit holds every file of the tarball (ignored ones too:
    Debian's .gitignore ends in "/*") with a fixed identity and date, so its
    id is the same wherever the same package is extracted."""
    env = base_env(tmp_path)
    src = tmp_path / "src/fixture-base"
    (src / ".gitignore").write_text("/*\n")
    pack(tmp_path)
    run("tree", env)
    tree = tmp_path / "b/linux"
    files = sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file())
    assert git(tree, "ls-tree", "-r", "--name-only", "base").split("\n") == files
    assert git(tree, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ad|%cd",
               "--date=unix", "base") == (
        "Fixture <fixture@localhost>|Fixture <fixture@localhost>|1277078400|1277078400")
    # A second extraction (no cache) gives the same commit.
    run("tree", at(env, tmp_path / "c"))
    assert git(tmp_path / "c/linux", "rev-parse", "base") == git(tree, "rev-parse", "base")


def test_base_is_extracted_once_then_cloned(tmp_path):
    """The second tree of a base is a clone of the first extraction
    (BASE_CACHE), with the same base commit."""
    env = base_env(tmp_path, cache=tmp_path / "cache")
    out1 = run("tree", at(env, tmp_path / "build1")).stdout
    out2 = run("tree", at(env, tmp_path / "build2")).stdout
    first, second = tmp_path / "build1/linux", tmp_path / "build2/linux"
    assert "extracting" in out1 and "kept the base in" in out1
    assert "extracting" not in out2 and "cloning the base from" in out2
    assert git(first, "rev-parse", "base") == git(second, "rev-parse", "base")
    assert git(second, "status", "--porcelain") == ""
    assert git(second, "rev-parse", "--abbrev-ref", "HEAD") == "yama"
    assert git(second, "remote") == ""
    # A file of the base, checked out.
    some = next(p for p in FIX.rglob("*") if p.is_file())
    assert (second / some.relative_to(FIX)).read_bytes() == some.read_bytes()


def test_a_base_that_is_no_source_package_is_not_fetched(tmp_path):
    """The fixture's base description names no BASE_SUITE: tools/fetch-base
    (which make tree and make deps run) does nothing for it, neither runs
    apt-get nor writes anything, and make tree of a missing tarball says
    so instead of fetching it."""
    env = base_env(tmp_path)
    assert "BASE_SUITE" not in pathlib.Path(env["BASE_CONF"]).read_text()
    apt_log = tmp_path / "apt-get.log"
    fake = tmp_path / "bin/apt-get"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "$*" >>"%s"\nexit 100\n' % apt_log)
    fake.chmod(0o755)
    path = "%s:%s" % (fake.parent, os.environ["PATH"])
    before = sorted(tmp_path.rglob("*"))
    proc = run("fetch-base", env, PATH=path)
    assert (proc.stdout, proc.stderr) == ("", "")
    assert sorted(tmp_path.rglob("*")) == before and not apt_log.exists()
    run("tree", env, PATH=path)                 # the tarball there: no fetch
    (tmp_path / "base.tar.xz").unlink()
    proc = run("tree", env, check=False, PATH=path, FORCE="1")
    assert proc.returncode != 0
    assert "%s missing" % (tmp_path / "base.tar.xz") in proc.stderr
    assert not apt_log.exists()
