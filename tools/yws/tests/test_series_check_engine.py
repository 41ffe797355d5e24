"""The series gates' engine end to end: Gates(ws).run and stage() on a
small git tree, with fake_kbuild.py as make (and so gcc and sparse) first
on PATH. Each test names one decision of the engine and fails when it is
broken; no kernel is built."""
import argparse
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from yws import series_check as G
from yws import results
from yws.ws import Workspace

from conftest import sh

FAKE_KBUILD = Path(__file__).resolve().parent / "fake_kbuild.py"

KCONFIG = """config SECURITY
\tbool "security"
config SECURITY_PATH
\tbool "path hooks"
config SYSCTL
\tbool
config PROC_SYSCTL
\tbool "/proc/sys"
config EXPERT
\tbool "expert"
config KUNIT
\tbool "KUnit"
config AUDIT
\tbool "audit"
source "security/yama/Kconfig"
"""
YAMA_KCONFIG = """config SECURITY_YAMA
\tbool "Yama"
config SECURITY_YAMA_KUNIT_TEST
\tbool "Yama's KUnit test"
"""
YAMA_LSM = "#include <linux/yama.h>\n\nint yama_scope = YAMA_SCOPE;\n"
UNUSED_X = "int x; /* WARN_ME unused variable 'x' [-Wunused-variable] */\n"
NEW_UNUSED_X = "security/yama/yama_lsm.c: warning: unused variable 'x' [-Wunused-variable]"
SPARSE_LOCK = "/* SPARSE_ME context imbalance in 'yama_lock' - unexpected unlock */\n"
# The base: a warning of its own (kernel/sys.c), a sparse finding of its
# own (security/commoncap.c), and what the engine reads besides make.
BASE = {
    "Makefile": "# fake_kbuild.py reads no Makefile\n",
    "Kconfig": KCONFIG,
    "security/yama/Kconfig": YAMA_KCONFIG,
    "include/linux/yama.h": "#define YAMA_SCOPE 1\n",
    "security/yama/yama_lsm.c": YAMA_LSM,
    "security/commoncap.c": "int cap; /* SPARSE_ME symbol 'cap' was not declared */\n",
    "kernel/sys.c": "int sys_old; /* WARN_ME unused variable 'sys_old' [-Wunused-variable] */\n",
    "lib/string.c": "int string;\n",
    "scripts/checkpatch.pl": "my $patch = do { local $/; <STDIN> };\n"
                             "print \"total: 0 errors, 0 warnings\\n\";\n",
    "scripts/kernel-doc": "exit 0;\n",
    "LICENSES/GPL-2.0": "GPL-2.0\n",
    "Documentation/admin-guide/LSM/Yama.rst": "Yama\n====\n\nYama is an LSM.\n",
    "tools/testing/selftests/yama/config": "CONFIG_SECURITY_YAMA=y\n",
}


# -- the tree and its series

def commit(tree, msg, files):
    """Commit files ({path: text, or None to delete}) on tree's HEAD."""
    for name, text in files.items():
        p = tree / name
        if text is None:
            p.unlink()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
    sh("git", "add", "-A", cwd=tree)
    sh("git", "commit", "-qm", msg, cwd=tree)
    return sh("git", "rev-parse", "HEAD", cwd=tree)


def series(tree, *patches):
    """The series patches ({path: text}) on the base, replacing any other:
    [the base's commit, patch 1's, ...]."""
    sh("git", "reset", "-q", "--hard", "base", cwd=tree)
    return [sh("git", "rev-parse", "base^{commit}", cwd=tree)] + [
        commit(tree, "patch %d" % n, files) for n, files in enumerate(patches, 1)]


def lsm(*lines):
    """security/yama/yama_lsm.c: the base's with lines added."""
    return {"security/yama/yama_lsm.c": YAMA_LSM + "".join(lines)}


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "author"
    t.mkdir()
    sh("git", "init", "-q", "-b", "main", cwd=t)
    sh("git", "config", "user.name", "T", cwd=t)
    sh("git", "config", "user.email", "t@example.org", cwd=t)
    commit(t, "base", BASE)
    sh("git", "tag", "base", cwd=t)
    return t


@pytest.fixture
def ws(tmp_path, tree):
    """The workspace's real root (its selftests/config fragments), the rest in tmp."""
    w = Workspace(build=tmp_path / "build", out=tmp_path / "out", tree=tree,
                  series=tmp_path / "series")
    w.argv = ["series-check"]
    return w


# -- make

class MakeLog:
    """fake_kbuild.py's record of the make runs."""

    def __init__(self, path):
        self.path = path

    def clear(self):
        self.path.write_text("")

    def runs(self):
        if not self.path.exists():
            return []
        return [json.loads(ln) for ln in self.path.read_text().splitlines()]

    def vmlinux(self, commits, odir="main"):
        """Patch numbers (0: the base) of the vmlinux builds in the main
        config in o/ODIR, in order."""
        at = {c: n for n, c in enumerate(commits)}
        return [at[r["head"]] for r in self.runs()
                if "vmlinux" in r["targets"] and r["odir"] == odir and r["yama"]]

    def olddefconfig(self, commits, odir):
        at = {c: n for n, c in enumerate(commits)}
        return [at[r["head"]] for r in self.runs()
                if "olddefconfig" in r["targets"] and r["odir"] == odir]


@pytest.fixture
def make(tmp_path, monkeypatch):
    """make is fake_kbuild.py; the tools' versions are fixed (a part of key0)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "make").write_text('#!/bin/sh\nexec /usr/bin/python3 -S -E %s "$@"\n' % FAKE_KBUILD)
    (bindir / "make").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    monkeypatch.setenv("FAKE_KBUILD_LOG", str(tmp_path / "make.jsonl"))
    monkeypatch.setattr(G, "tool_versions", lambda: ["gcc (fake) 14.2.0"])
    return MakeLog(tmp_path / "make.jsonl")


# -- the gates

def run_gates(ws):
    """Gates(ws).run's cells: {row: {gate: {status, detail}}}."""
    return G.Gates(ws).run(SimpleNamespace(verdict=None, summary=None))


def column(cells, gate):
    """{patch row: status} of one gate."""
    return {row: cs[gate]["status"] for row, cs in cells.items() if row.startswith("patch")}


def detail(cells, row, gate):
    return "\n".join(cells[row][gate]["detail"])


# -- 1. the walk back

def test_builds_walk_back_from_the_tip_and_judge_each_patch_on_its_own_build(ws, tree, make):
    commits = series(tree, lsm("int yama_named;\n"),
                     lsm("int yama_named;\n", UNUSED_X),
                     lsm("int yama_named;\n", "int yama_fixed;\n"))
    cells = run_gates(ws)
    assert make.vmlinux(commits) == [3, 2, 1]
    # patch 2's warning is gone at the tip: only its own build shows it
    assert column(cells, "build") == {"patch 1/3": "pass", "patch 2/3": "FAIL",
                                      "patch 3/3": "pass"}
    assert detail(cells, "patch 2/3", "build") == "new: " + NEW_UNUSED_X


# -- 2. a build reused when no build reads what differs

def test_a_state_differing_only_in_files_no_build_reads_gets_the_later_build(ws, tree, make):
    commits = series(tree,
                     {"Documentation/admin-guide/LSM/Yama.rst": "Yama\n====\n\nMore.\n"},
                     lsm("int yama_named;\n"),
                     {"tools/testing/selftests/yama/config": "CONFIG_SECURITY_YAMA=y\n# more\n"},
                     {"include/linux/yama.h": "#define YAMA_SCOPE 2\n"},
                     {"Documentation/admin-guide/LSM/Yama.rst": "Yama\n====\n\nEven more.\n"})
    cells = run_gates(ws)
    # 5: the tip. 4 differs from it in Documentation/ only: 5's build.
    # 3 differs in a header yama_lsm.o read: built. 2 differs from 3 in
    # tools/testing/ only: 3's build. 1 differs from 3 in a .c: built.
    assert make.vmlinux(commits) == [5, 3, 1]
    assert set(column(cells, "build").values()) == {"pass"}


def test_a_file_under_tools_testing_that_an_object_reads_is_built(ws, tree, make):
    limits = "tools/testing/selftests/yama/limits.h"
    commits = series(tree,
                     {**lsm('#include "../../tools/testing/selftests/yama/limits.h"\n',
                            "int yama_limit = YAMA_LIMIT;\n"),
                      limits: "#define YAMA_MAX 4\n"},
                     {limits: "#define YAMA_LIMIT 4\n"})
    cells = run_gates(ws)
    # the .cmd of yama_lsm.o names limits.h: patch 1 is built, and fails
    assert make.vmlinux(commits) == [2, 1]
    assert column(cells, "build") == {"patch 1/2": "FAIL", "patch 2/2": "pass"}
    assert "'YAMA_LIMIT' undeclared" in detail(cells, "patch 1/2", "build")


# -- 3. objects that read a header the checkout removed

def test_a_header_only_a_later_patch_adds_is_not_read_from_a_stale_object(ws, tree, make):
    series(tree,
           {"security/yama/yama_lsm.c": "#include <linux/yama_limits.h>\n" + YAMA_LSM},
           {"include/linux/yama_limits.h": "#define YAMA_LIMIT 4\n"})
    cells = run_gates(ws)
    assert column(cells, "build") == {"patch 1/2": "FAIL", "patch 2/2": "pass"}
    assert "fatal error: linux/yama_limits.h: No such file or directory" in \
        detail(cells, "patch 1/2", "build")


def test_a_header_only_a_later_patch_renames_in_is_not_read_from_a_stale_object(ws, tree, make):
    series(tree,
           {"security/yama/yama_lsm.c": YAMA_LSM.replace("yama.h", "yama_scope.h")},
           {"include/linux/yama.h": None, "include/linux/yama_scope.h": "#define YAMA_SCOPE 1\n"})
    cells = run_gates(ws)
    assert column(cells, "build") == {"patch 1/2": "FAIL", "patch 2/2": "pass"}
    assert "fatal error: linux/yama_scope.h: No such file or directory" in \
        detail(cells, "patch 1/2", "build")


# -- 4. the cache: a result under a hash of all its inputs

THREE_PATCHES = (lsm("int yama_named;\n"),
                 {"include/linux/yama.h": "#define YAMA_SCOPE 2\n"},
                 lsm("int yama_named;\n", "int yama_more;\n"))


def test_a_second_run_with_nothing_changed_makes_nothing(ws, tree, make):
    series(tree, *THREE_PATCHES)
    first = run_gates(ws)
    make.clear()
    assert run_gates(ws) == first
    assert make.runs() == []


def test_a_changed_patch_rebuilds_only_the_states_it_changes(ws, tree, make):
    series(tree, *THREE_PATCHES)
    run_gates(ws)
    make.clear()
    # patch 2 changed: states 2 and 3 are new, patch 1's is not (a new
    # commit of the same tree)
    changed = dict(THREE_PATCHES[1], **{"lib/string.c": "int string, strings;\n"})
    commits = series(tree, THREE_PATCHES[0], changed, THREE_PATCHES[2])
    cells = run_gates(ws)
    assert make.vmlinux(commits) == [3, 2]
    assert commits[1] not in {r["head"] for r in make.runs()}
    assert set(column(cells, "build").values()) == {"pass"}


def test_each_input_of_key0_rebuilds_every_state(ws, tree, make, monkeypatch, tmp_path):
    commits = series(tree, *THREE_PATCHES)
    run_gates(ws)

    def changed_wrapper(name):
        copy = tmp_path / name
        copy.write_text(getattr(G, name).read_text() + "# changed\n")
        return copy
    for what, new in [("tool_versions", lambda: ["gcc (fake) 15.1.0"]),
                      ("CCWRAP", changed_wrapper("CCWRAP")),
                      ("SPARSEWRAP", changed_wrapper("SPARSEWRAP"))]:
        make.clear()
        monkeypatch.setattr(G, what, new)
        run_gates(ws)
        assert make.vmlinux(commits) == [3, 2, 1], "after a new %s" % what


# -- 5. build warnings: new once, the base's never

def test_a_new_warning_is_charged_to_its_patch_once_and_the_base_s_never(ws, tree, make):
    commits = series(tree, lsm("int yama_named;\n"),
                     lsm("int yama_named;\n", UNUSED_X),
                     lsm("int yama_moved;\n", "int yama_named;\n", UNUSED_X))
    cells = run_gates(ws)
    # kernel/sys.c warns in every state and at the base: no row is red for it
    assert column(cells, "build") == {"patch 1/3": "pass", "patch 2/3": "FAIL",
                                      "patch 3/3": "pass"}
    assert detail(cells, "patch 2/3", "build") == "new: " + NEW_UNUSED_X
    # the base is never built whole: only the objects that warn in the series
    at_base = [r for r in make.runs() if r["head"] == commits[0] and r["C"] is None
               and not any(t.endswith("config") for t in r["targets"])]
    assert [r["targets"] for r in at_base] == [["kernel/sys.o", "security/yama/yama_lsm.o"]]
    assert sorted(at_base[0]["compiled"]) == ["kernel/sys.o", "security/yama/yama_lsm.o"]


# -- 6. a patch that builds only with a later one

def test_a_middle_patch_that_does_not_build_on_its_own_fails_its_build(ws, tree, make):
    series(tree, lsm("int yama_named;\n"),
           lsm("int yama_named;\n", "int yama_limit = YAMA_LIMIT;\n"),
           {"include/linux/yama.h": "#define YAMA_SCOPE 1\n#define YAMA_LIMIT 4\n"})
    assert G.stage(ws, argparse.Namespace(sysctl_whole=False)) == 1
    res = results.read(ws.results, "series-check")
    cells = res["details"]["cells"]
    assert column(cells, "build") == {"patch 1/3": "pass", "patch 2/3": "FAIL",
                                      "patch 3/3": "pass"}
    assert "error: 'YAMA_LIMIT' undeclared" in detail(cells, "patch 2/3", "build")
    assert cells["patch 2/3"]["sparse"]["status"] == "-"
    assert res["verdict"] == "fail"
    assert [c["name"] for c in res["details"]["failed_cases"]] == ["patch 2/3 build"]


# -- 7. configure: olddefconfig only when its inputs changed

def test_olddefconfig_runs_again_only_when_the_state_s_kconfig_changed(ws, tree, make):
    commits = series(tree, lsm("int yama_named;\n"),
                     lsm("int yama_named;\n", "int yama_more;\n"),
                     {"security/yama/Kconfig": YAMA_KCONFIG + "config SECURITY_YAMA_LINKS\n"
                                                              "\tbool \"links\"\n"})
    run_gates(ws)
    # o/main: the tip; patch 2 (without patch 3's Kconfig line); not patch 1
    # (the same Kconfig as 2: its stamp holds); the tip again in yama=n (a
    # fragment of its own); the base, in the main config again
    assert make.olddefconfig(commits, "main") == [3, 2, 3, 0]


def test_a_changed_fragment_reconfigures(ws, tree, make, monkeypatch):
    commits = series(tree, *THREE_PATCHES)
    run_gates(ws)
    kunit = ws.build / "series-check/o/kunit/.config"
    assert "CONFIG_SECURITY_YAMA_KUNIT_TEST=y" in kunit.read_text()
    make.clear()
    monkeypatch.setattr(G, "BASE_FRAGMENT", G.BASE_FRAGMENT + "CONFIG_AUDIT=y\n")
    run_gates(ws)
    assert make.olddefconfig(commits, "kunit") == [3]
    assert "CONFIG_AUDIT=y" in kunit.read_text().splitlines()


# -- sparse: the touched files against the base and the patch before

def test_a_new_sparse_finding_is_charged_once_and_the_base_s_never(ws, tree, make):
    commits = series(tree,
                     {"security/commoncap.c": "int cap; /* SPARSE_ME symbol 'cap' was not "
                                              "declared */\nint cap2;\n"},
                     lsm("int yama_lock;\n", SPARSE_LOCK),
                     lsm("int yama_moved;\n", "int yama_lock;\n", SPARSE_LOCK))
    cells = run_gates(ws)
    assert column(cells, "sparse") == {"patch 1/3": "pass", "patch 2/3": "FAIL",
                                       "patch 3/3": "pass"}
    assert detail(cells, "patch 2/3", "sparse") == (
        "new: security/yama/yama_lsm.c: warning: context imbalance in 'yama_lock' "
        "- unexpected unlock")
    at = {c: n for n, c in enumerate(commits)}
    checked = [(at[r["head"]], r["targets"]) for r in make.runs() if r["C"] == "2"]
    assert (2, ["security/yama/yama_lsm.o"]) in checked
    assert (1, ["security/commoncap.o"]) in checked
