"""Tests of the series gates (series_check.py) with fake kbuild, checkpatch and
kernel-doc output: no kernel is built."""
import argparse
import json

import pytest

from yws import series_check as gates, results
from yws.series_check import judge, new_in, state_warnings

from conftest import sh

CHECKPATCH = r"""#!/usr/bin/perl
# fake checkpatch: records its arguments, prints and exits as told
open(my $a, '>', "args.txt"); print $a join(" ", @ARGV); close $a;
my $patch = do { local $/; <STDIN> };
my $out = do { local $/; open(my $f, '<', "scripts/out.txt") or die; <$f> };
print $out;
exit(($patch =~ /EXIT1/ || $out =~ /^(ERROR|WARNING|CHECK):/m) ? 1 : 0);
"""
KERNEL_DOC = r"""#!/usr/bin/perl
# fake kernel-doc: one warning per line holding BADDOC
for my $f (@ARGV) { open(my $h, '<', $f); my $n = 0;
  while (<$h>) { $n++; print STDERR "$f:$n: warning: Function parameter or member 'x' not described\n" if /BADDOC/; } }
"""


def commit(t, msg, **files):
    for name, text in files.items():
        (t / name).parent.mkdir(parents=True, exist_ok=True)
        (t / name).write_text(text)
    sh("git", "add", "-A", cwd=t)
    sh("git", "commit", "-qm", msg, cwd=t)
    return sh("git", "rev-parse", "HEAD", cwd=t)


@pytest.fixture
def g(ws, repo):
    """Gates on the tiny tree, with fake checkpatch.pl and kernel-doc."""
    commit(repo, "scripts", **{"scripts/checkpatch.pl": CHECKPATCH, "scripts/kernel-doc": KERNEL_DOC,
                               "scripts/out.txt": "total: 0 errors, 0 warnings\n",
                               "LICENSES/GPL-2.0": "GPL\n"})
    gg = gates.Gates(ws)
    gg.clone()
    return gg


def state(g, rev):
    c = sh("git", "rev-parse", rev, cwd=g.ws.tree)
    return {"commit": c, "tree": sh("git", "rev-parse", c + "^{tree}", cwd=g.ws.tree)}


def test_checkpatch_runs_strict_without_the_three_ignored_types(g, repo):
    res = g.checkpatch(commit(repo, "clean", **{"b.c": "int b;\n"}))
    assert res == {"ok": True, "detail": ["total: 0 errors, 0 warnings"]}
    args = (repo / "args.txt").read_text().split()
    assert "--strict" in args and "--codespell" in args
    assert args[args.index("--ignore") + 1] == "UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES,SYMBOLIC_PERMS"


def test_checkpatch_exit_status_is_the_verdict(g, repo):
    # exit 1 with no line the gate knows how to read: still red
    res = g.checkpatch(commit(repo, "EXIT1", **{"c.c": "int c;\n"}))
    assert not res["ok"] and res["detail"] == ["total: 0 errors, 0 warnings"]
    assert gates.checkpatch_verdict(1, "") == {"ok": False, "detail": ["checkpatch exit 1"]}
    assert gates.checkpatch_verdict(0, "total: 0 errors, 0 warnings")["ok"]


def test_checkpatch_findings_are_the_detail(g, repo):
    commit(repo, "script says", **{"scripts/out.txt": "CHECK: Alignment should match\n#9: FILE: b.c:1:\n"
                                   "total: 0 errors, 0 warnings, 1 checks\n"})
    res = g.checkpatch(commit(repo, "style", **{"d.c": "int d;\n"}))
    assert not res["ok"]
    assert res["detail"] == ["CHECK: Alignment should match", "  #9: FILE: b.c:1:",
                             "total: 0 errors, 0 warnings, 1 checks"]


def test_a_stale_cache_cannot_change_a_verdict(g, repo):
    c = commit(repo, "clean", **{"e.c": "int e;\n"})
    assert g.checkpatch(c)["ok"]
    # a new checkpatch (another input: HEAD:scripts) is run, not taken from the cache
    commit(repo, "stricter checkpatch", **{"scripts/out.txt": "ERROR: new rule\ntotal: 1 errors\n"})
    assert not g.checkpatch(c)["ok"]
    # a result kept under every key there is cannot pass another patch
    for f in g.cache.glob("*.json"):
        f.write_text(json.dumps({"ok": True, "detail": []}))
    assert not g.checkpatch(commit(repo, "EXIT1 other", **{"f.c": "int f;\n"}))["ok"]


def test_a_failed_build_is_not_kept(g):
    calls = []

    def failing():
        calls.append(1)
        return {"ok": False, "transient": True}
    g.cached(["x"], failing)
    g.cached(["x"], failing)
    assert len(calls) == 2 and not list(g.cache.glob("*.json"))


def test_kernel_doc_judges_new_warnings_not_moved_lines(g, repo):
    a = state(g, commit(repo, "doc", **{"y.c": "/* BADDOC */\nint y;\n"}))
    moved = state(g, commit(repo, "move", **{"y.c": "\n\n/* BADDOC */\nint y;\n"}))
    g.clone()
    assert g.kdoc(a, moved) == {"ok": True, "detail": []}
    worse = state(g, commit(repo, "worse", **{"y.c": "/* BADDOC */\nint y; /* BADDOC */\n",
                                              "z.h": "/* BADDOC */\n"}))
    g.clone()
    res = g.kdoc(moved, worse)
    assert not res["ok"] and len(res["detail"]) == 1 and "z.h:" in res["detail"][0]


def test_norm_drops_build_paths_and_line_numbers_only():
    a = gates.norm("/x/build/series-check/author/security/yama/yama_lsm.c:120:5: warning: unused 'x'")
    b = gates.norm("../author/security/yama/yama_lsm.c:133:9: warning: unused 'x'")
    assert gates.norm("../../author/security/yama/yama_lsm.c:9:1: warning: unused 'x'") == a
    assert a == b == "security/yama/yama_lsm.c: warning: unused 'x'"
    assert gates.norm("include/linux/security.h:7: warning: w").startswith("include/linux/security.h:")


def fake_build(tmp_path, name, warn_files, make_output=""):
    """A fake kbuild state: OBJ.warn files as cc-wrap leaves them."""
    odir = tmp_path / name
    objs = set()
    for obj, text in warn_files.items():
        (odir / obj).parent.mkdir(parents=True, exist_ok=True)
        (odir / obj).write_text("")
        if text:
            (odir / (obj + ".warn")).write_text(text)
        objs.add(odir / obj)
    return {"ok": True, "warnings": state_warnings(odir, make_output, objs)}


VSPRINTF = "../../author/lib/vsprintf.c:%d:2: warning: function might be a candidate for 'gnu_printf' format attribute\n"
UNUSED = "../../author/security/yama/yama_lsm.c:%d:6: warning: unused variable 'x' [-Wunused-variable]\n    | int x;\n"


def row(n, build, sparse=None):
    return {"n": n, "checkpatch": {"ok": True}, "kdoc": {"ok": True}, "build": build,
            "sparse": sparse or {"ok": True, "files": {}}}


def red(cells):
    return sorted((r, g) for r, cs in cells.items() for g, c in cs.items() if c["status"] == "FAIL")


def test_a_new_warning_is_red_once_and_a_base_warning_never(tmp_path):
    base = fake_build(tmp_path, "b", {"lib/vsprintf.o": VSPRINTF % 100})
    p1 = fake_build(tmp_path, "1", {"lib/vsprintf.o": VSPRINTF % 120, "security/yama/yama_lsm.o": ""})
    p2 = fake_build(tmp_path, "2", {"lib/vsprintf.o": VSPRINTF % 120,
                                    "security/yama/yama_lsm.o": UNUSED % 10})
    p3 = fake_build(tmp_path, "3", {"lib/vsprintf.o": VSPRINTF % 120,
                                    "security/yama/yama_lsm.o": UNUSED % 44})
    assert p2["warnings"]["security/yama/yama_lsm.c: warning: unused variable 'x' "
                          "[-Wunused-variable]"] == ["security/yama/yama_lsm.o"]
    cells = judge([row(1, p1), row(2, p2), row(3, p3)], set(base["warnings"]), {}, {}, {"ok": True}, [])
    assert red(cells) == [("patch 2/3", "build")]
    assert cells["patch 2/3"]["build"]["detail"] == [
        "new: security/yama/yama_lsm.c: warning: unused variable 'x' [-Wunused-variable]"]


def test_make_s_own_lines_count_and_name_no_object(tmp_path):
    b = fake_build(tmp_path, "1", {"a.o": ""}, "  LD vmlinux\nld.lld: warning: orphan section\n")
    assert b["warnings"] == {"ld.lld: warning: orphan section": ["(make)"]}
    assert red(judge([row(1, b)], set(), {}, {}, {"ok": True}, [])) == [("patch 1/1", "build")]


def test_a_failed_build_is_red_and_sparse_not_run():
    cells = judge([row(1, {"ok": False, "detail": ["error: x"]})], set(), {}, {}, {"ok": True}, [])
    assert cells["patch 1/1"]["build"]["status"] == "FAIL"
    assert cells["patch 1/1"]["sparse"]["status"] == "-"


def test_sparse_counts_findings_per_file_as_a_multiset():
    known = ["security/yama/yama_lsm.c: error: incorrect type in argument 1 (different address spaces)"]
    ok = {"ok": True, "warnings": {}}
    four = {"ok": True, "files": {"security/yama/yama_lsm.c": known * 4}}
    five = {"ok": True, "files": {"security/yama/yama_lsm.c": known * 5}}
    cells = judge([row(1, ok, four), row(2, ok, five), row(3, ok, five)], set(),
                  {"security/yama/yama_lsm.c": known * 4}, {}, {"ok": True}, [])
    assert red(cells) == [("patch 2/3", "sparse")]


def test_the_tip_matrix_judges_new_warnings_and_excuses_only_the_base_s(tmp_path):
    ok = {"ok": True, "warnings": {}}
    rt = "kernel/sched/rt.c: warning: 'max_rt_runtime' defined but not used [-Wunused-variable]"
    matrix = {"yama=n": ok, "sysctl=n": {"ok": True, "warnings": {rt: ["kernel/sched/build_policy.o"]}},
              "kunit-test=y": {"ok": False, "detail": ["CONFIG_SECURITY_YAMA_KUNIT_TEST is None"]}}
    cells = judge([row(1, ok)], set(), {}, matrix, {"ok": True}, ["security/yama/yama_lsm.c"])
    assert red(cells) == [("tip", "kunit-test=y")]
    cells = judge([row(1, ok)], set(), {}, matrix, {"ok": True}, ["kernel/sched/rt.c"])
    assert ("tip", "sysctl=n") in red(cells)
    assert "CONFIG_SYSCTL=y" not in gates.MATRIX["sysctl=n"]
    assert gates.EXPECT["kunit-test=y"] == ("CONFIG_SECURITY_YAMA_KUNIT_TEST", "y")


def test_new_in_is_red_for_any_new_warning():
    assert new_in(["w"]) == {"ok": False, "detail": ["new: w"]} and new_in([])["ok"]


def test_rst_tolerates_sphinx_but_not_broken_rst():
    assert gates.rst_check({"a.rst": "Title\n=====\n\nSee :doc:`x`.\n\n.. kernel-doc:: y.c\n"})["ok"]
    assert not gates.rst_check({"b.rst": "Title\n=====\n\n.. nosuchthing::\n\n   x\n"})["ok"]


def test_a_tree_with_uncommitted_edits_is_refused(ws, repo):
    (repo / "a.c").write_text("int edited;\n")
    args = argparse.Namespace(sysctl_whole=False)
    assert gates.stage(ws, args) == 1
    res = results.read(ws.results, "series-check")
    assert res["verdict"] == "fail" and "uncommitted edits" in res["summary"]
    assert not (ws.build / "gates" / "linux").exists()



def test_a_stale_olddefconfig_stamp_is_not_trusted(g, repo):
    """configure() skips olddefconfig only while the text, the state's
    Kconfig inputs and .config itself are what its stamp was made from."""
    calls = []

    def fake_make(odir, *args):
        calls.append(args)
        cfg = odir / ".config"
        cfg.write_text(cfg.read_text() + "# olddefconfig %d\n" % len(calls))
        return 0, ""
    g.make = fake_make
    odir = g.o / "test"
    g.checkout(commit(repo, "kconfig 1", **{"Kconfig": "config A\n"}))
    g.configure(odir, "CONFIG_A=y\n")
    g.configure(odir, "CONFIG_A=y\n")
    assert len(calls) == 1                      # the same inputs: stamped
    g.configure(odir, "CONFIG_B=y\n")
    assert len(calls) == 2                      # another fragment
    (odir / ".config").write_text("CONFIG_B=y\n# edited by hand\n")
    assert g.configure(odir, "CONFIG_B=y\n").endswith("# olddefconfig 3\n")
    g.checkout(commit(repo, "kconfig 2", **{"Kconfig": "config A\nconfig B\n"}))
    g.configure(odir, "CONFIG_B=y\n")
    assert len(calls) == 4                      # a Kconfig file changed
    g.configure(odir, "CONFIG_B=y\n")
    assert len(calls) == 4
