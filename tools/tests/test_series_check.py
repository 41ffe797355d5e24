"""Tests of tools/series-check (tools/gates/series_check.py).

The fast tests need nothing. The gate tests build kernels (a minute or two
each with a warm ccache) and run only with RUN_GATE_TESTS=1:
    RUN_GATE_TESTS=1 python3 -m pytest -q tools/tests/test_series_check.py
They feed scratch series (tools/gates/make-scratch-series) through
SERIES_DIR and check that the right cell turns red.
"""
import json
import os
import subprocess

import pytest

WS = os.environ["WS"]  # conftest.py
import series_check as sc  # noqa: E402

SLOW = pytest.mark.skipif(os.environ.get("RUN_GATE_TESTS") != "1",
                          reason="builds kernels; set RUN_GATE_TESTS=1")


def test_norm_drops_paths_and_line_numbers():
    a = sc.norm(sc.SRC + "/security/yama/yama_lsm.c:120:5: warning: unused variable 'x' [-Wunused-variable]")
    b = sc.norm("security/yama/yama_lsm.c:133:9: warning: unused variable 'x' [-Wunused-variable]")
    assert a == b == "security/yama/yama_lsm.c: warning: unused variable 'x' [-Wunused-variable]"


def test_diag_lines_picks_diagnostics_only():
    text = "  CC      a.o\na.c:1:2: warning: w [-Wx]\n  int x;\n      ^\nb.o: warning: objtool: f\n" \
           "make[2]: *** [x] Error 1\nld: error: undefined\n"
    assert sc.diag_lines(text) == ["a.c:1:2: warning: w [-Wx]", "b.o: warning: objtool: f",
                                   "ld: error: undefined"]


def test_kernel_doc_lines_are_recognised():
    assert sc.KDOC_LINE.match("security/yama/x.c:12: warning: Function parameter or member")
    assert not sc.KDOC_LINE.match("security/yama/x.c:12:3: warning: unused")


def test_config_value():
    cfg = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=3\n"
    assert sc.config_value(cfg, "CONFIG_A") == "y"
    assert sc.config_value(cfg, "CONFIG_B") is None
    assert sc.config_value(cfg, "CONFIG_C") == "3"


def scratch(variant, tmp_path):
    out = tmp_path / variant
    subprocess.run([os.path.join(WS, "tools/gates/make-scratch-series"), str(out), variant],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def run_gates(series_dir, tmp_path):
    prefix = str(tmp_path / ("result-" + os.path.basename(series_dir)))
    env = dict(os.environ, SERIES_DIR=str(series_dir), SERIES_CHECK_OUT=prefix)
    p = subprocess.run([os.path.join(WS, "tools/series-check")], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    with open(prefix + ".json") as f:
        res = json.load(f)
    red = {(r.split()[0], g) for r, gates in res["cells"].items()
           for g, c in gates.items() if c["status"] == "FAIL"}
    return p.returncode, red, p.stdout


@SLOW
def test_good_scratch_series_is_green(tmp_path):
    rc, red, out = run_gates(scratch("good", tmp_path), tmp_path)
    assert rc == 0 and not red, out


@SLOW
@pytest.mark.parametrize("variant,cell", [
    ("style", ("1", "checkpatch")),     # if( -> checkpatch ERROR/CHECK
    ("w1", ("1", "build")),             # unused static const: W=1 only
    ("kdoc", ("1", "kernel-doc")),      # a parameter without description
    ("sparse", ("1", "sparse")),        # an undeclared global: sparse only
    ("reorder", ("1", "build")),        # 2/2 first: scope.h does not exist yet
])
def test_injected_fault_turns_the_right_cell_red(variant, cell, tmp_path):
    rc, red, out = run_gates(scratch(variant, tmp_path), tmp_path)
    assert rc != 0, out
    assert cell in red, out
    # the patch that carries no fault stays green in its gate
    assert ("2", cell[1]) not in red or variant == "w1", out


def test_rst_gate_tolerates_sphinx_but_not_broken_rst(monkeypatch):
    docs = {
        "ok.rst": "Title\n=====\n\nSee :doc:`other` and :c:func:`foo`.\n\n.. kernel-doc:: x.c\n",
        "bad.rst": "Title\n=====\n\n- item\n\n  text\n    unexpected\n indentation\n\n.. nosuchthing:: x\n",
    }
    monkeypatch.setattr(sc, "blob", lambda state, p: docs.get(p))
    assert sc.rst_check(None, ["ok.rst"])["ok"]
    res = sc.rst_check(None, ["bad.rst"])
    assert not res["ok"] and res["detail"], res


def test_base_fragment_has_what_yama_selects():
    # patch 4 makes Yama select SECURITY_PATH: in the base config from the
    # start, no patch changes what security.h (nearly every object) sees
    assert "CONFIG_SECURITY_PATH=y" in sc.BASE_FRAGMENT.splitlines()


def test_the_main_config_has_no_kunit_and_the_kunit_test_entry_turns_it_on(monkeypatch):
    """The main config is the selftest kernel's (the gates' part, the test
    kernel's fragments, the tip's selftests config), without KUnit, so the
    tip's objects are the test kernel's in ccache. The KUnit test code is
    compiled in the matrix entry kunit-test=y, in a build folder of its own
    (KUNIT=y changes autoconf.h, which every object reads); it must end
    up with the test on. One tip cell per gate name."""
    assert not [l for l in sc.BASE_FRAGMENT.splitlines() if "KUNIT" in l]
    monkeypatch.setattr(sc, "blob", lambda state, p: "CONFIG_SELFTESTS_OF_THE_TIP=y\n"
                        if p == "tools/testing/selftests/yama/config" else None)
    frag = sc.fragment(None).splitlines()
    assert frag[-1] == "CONFIG_SELFTESTS_OF_THE_TIP=y"     # the tip's config last
    assert "CONFIG_DEBUG_ATOMIC_SLEEP=y" in frag               # the test kernel's
    assert not [l for l in frag if "KUNIT" in l]
    assert sc.MATRIX["kunit-test=y"].splitlines() == [
        "CONFIG_KUNIT=y", "CONFIG_SECURITY_YAMA_KUNIT_TEST=y"]
    assert sc.MATRIX_EXPECT["kunit-test=y"] == ("CONFIG_SECURITY_YAMA_KUNIT_TEST", "y")
    assert sc.MATRIX_GATES == ["yama=n", "sysctl=n", "kunit-test=y"]
    assert sc.TIP_GATES == sc.MATRIX_GATES + ["rst"]
    assert set(sc.MATRIX) - {"main"} == set(sc.MATRIX_EXPECT) == set(sc.MATRIX_GATES)
    folders = [sc.ODIR_MAIN] + list(sc.ODIRS.values())
    assert len(set(folders)) == len(folders)
    assert sc.ODIRS["kunit-test=y"] not in (sc.ODIR_MAIN, sc.ODIRS["sysctl=n"])


def test_changed_symbols_treats_unset_and_undefined_alike():
    a = "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=1\n"
    b = "CONFIG_A=y\n# CONFIG_B is not set\n# CONFIG_NEW is not set\nCONFIG_C=2\nCONFIG_D=y\n"
    assert sc.changed_symbols(a, b) == ["C", "D"]


def test_in_scope_follows_kbuild_dependency_lists(tmp_path, monkeypatch):
    monkeypatch.setattr(sc, "ODIR", str(tmp_path))
    d = tmp_path / "kernel"
    d.mkdir()
    (d / ".a.o.cmd").write_text(
        "deps_kernel/a.o := \\\n  %s/include/linux/security.h \\\n"
        "    $(wildcard include/config/SECURITY_PATH) \\\n" % sc.SRC)
    (d / ".b.o.cmd").write_text(
        "deps_kernel/b.o := \\\n  %s/include/linux/sched.h \\\n"
        "    $(wildcard include/config/SECURITY_PATH_X) \\\n" % sc.SRC)
    by_file = {"files": ["include/linux/security.h"], "symbols": []}
    by_sym = {"files": [], "symbols": ["SECURITY_PATH"]}
    own = {"files": ["kernel/b.c"], "symbols": []}
    none = {"files": ["security/yama/yama.h"], "symbols": ["SECURITY_YAMA_X"]}
    a, b = str(d / "a.o"), str(d / "b.o")
    assert sc.in_scope(a, by_file) and not sc.in_scope(b, by_file)
    assert sc.in_scope(a, by_sym) and not sc.in_scope(b, by_sym)
    assert sc.in_scope(b, own) and not sc.in_scope(a, own)
    assert not sc.in_scope(a, none) and not sc.in_scope(b, none)
    # no dependency list: counted
    assert sc.in_scope(str(d / "c.o"), none)
    objs = {a, b}
    assert not sc.line_in_scope("kernel/b.o: warning: objtool: f()", none, objs)
    assert sc.line_in_scope("kernel/b.o: warning: objtool: f()", own, objs)
    assert sc.line_in_scope("ld: warning: something", none, objs)


def test_sysctl_n_compiles_the_series_objects_the_main_config_builds(tmp_path, monkeypatch):
    """make check's SYSCTL=n cell: the objects of the C files the series
    touches that o-main built (they have a .cmd), nothing of tools/."""
    monkeypatch.setattr(sc, "ODIR", str(tmp_path))
    for o in ("fs/.namei.o.cmd", "security/yama/.yama_lsm.o.cmd", "security/.security.o.cmd"):
        (tmp_path / o).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / o).write_text("")
    got = sc.series_objects(["security/yama/yama_lsm.c", "fs/namei.c", "security/security.c",
                             "security/selinux/hooks.c", "include/linux/security.h",
                             "tools/testing/selftests/yama/sysctl_test.c"])
    assert got == ["fs/namei.o", "security/security.o", "security/yama/yama_lsm.o"]


def test_warnings_of_objects_built_alone(tmp_path, monkeypatch):
    """With targets (no vmlinux to list members), only their warnings count."""
    monkeypatch.setattr(sc, "ODIR", str(tmp_path))
    (tmp_path / "fs").mkdir()
    (tmp_path / "fs/namei.o").write_text("")
    (tmp_path / "fs/namei.o.warn").write_text(
        "fs/namei.c:10:5: warning: unused variable 'a' [-Wunused-variable]\n")
    (tmp_path / "fs/open.o").write_text("")
    (tmp_path / "fs/open.o.warn").write_text(
        "fs/open.c:3:1: warning: unused variable 'b' [-Wunused-variable]\n")
    warns, sources = sc.state_warnings("", None, ["fs/namei.o"])
    assert warns == {"fs/namei.c: warning: unused variable 'a' [-Wunused-variable]"}
    assert sources[next(iter(warns))] == ["fs/namei.o"]


def test_files_a_kernel_build_may_read(tmp_path):
    """Documentation, selftests and MAINTAINERS are not read, unless a
    Kconfig file or a file an object of the last build read (its .cmd);
    without a build to tell, everything may be read."""
    kept = ["tools/objtool/check.c", "tools/include/linux/types.h",
            "security/yama/Kconfig", "include/linux/security.h", "Makefile",
            "Documentation/Kconfig"]
    mine = ["Documentation/admin-guide/LSM/Yama.rst", "MAINTAINERS",
            "tools/testing/selftests/yama/Makefile",
            "tools/testing/selftests/kselftest_module.h"]
    assert sc.kernel_files(kept + mine) == kept + mine         # no build
    (tmp_path / "include/config").mkdir(parents=True)
    (tmp_path / "include/config/auto.conf.cmd").write_text("")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/.test_printf.o.cmd").write_text(
        "deps_lib/test_printf.o := \\\n"
        "  ../linux/tools/testing/selftests/kselftest_module.h \\\n")
    assert sc.kernel_files(kept + mine, str(tmp_path)) == kept + [
        "tools/testing/selftests/kselftest_module.h"]


def test_a_state_that_differs_in_what_no_build_reads_shares_a_build(monkeypatch):
    """Built from the last state back. States 3 and 2 differ from the
    built state 4 only by patches 4 and 3 (selftests, MAINTAINERS,
    documentation): they share its build. State 1 lacks patch 2's C
    change: built."""
    files = {1: ["include/linux/security.h"], 2: ["security/yama/yama_lsm.c"],
             3: ["Documentation/admin-guide/LSM/Yama.rst"],
             4: ["tools/testing/selftests/yama/Makefile", "MAINTAINERS"]}
    states = [{"n": n} for n in (1, 2, 3, 4)]

    def changed(a, b):
        return [f for n in range(a["n"] + 1, b["n"] + 1) for f in files[n]]

    monkeypatch.setattr(sc, "ODIR", None)
    monkeypatch.setattr(sc, "kernel_files", lambda fs, odir=None: [
        f for f in fs if not f.startswith(sc.NOT_KERNEL)])
    made = []
    got = sc.build_all(states, lambda st: made.append(st["n"]) or "r%d" % st["n"], changed)
    assert made == [4, 1]
    assert got == {4: ("r4", 4), 3: ("r4", 4), 2: ("r4", 4), 1: ("r1", 1)}


def test_the_main_folders_link_as_the_test_kernel_and_sysctl_n_with_gnu_ld(monkeypatch):
    # o-main (and every folder but o-sysctl) links with the test kernel's
    # linker, so its Kconfig and objects are the test kernel's; o-sysctl
    # keeps GNU ld, which make check-debug's whole SYSCTL=n build links with
    monkeypatch.setenv("KBUILD_LINK", "LD=ld.lld")
    assert sc.link_args(sc.ODIR_MAIN) == ["LD=ld.lld"]
    assert sc.link_args(sc.ODIRS["base-whole"]) == ["LD=ld.lld"]
    assert sc.link_args(sc.ODIRS["kunit-test=y"]) == ["LD=ld.lld"]
    assert sc.link_args(sc.ODIRS["sysctl=n"]) == []
    monkeypatch.delenv("KBUILD_LINK")
    with pytest.raises(SystemExit):
        sc.link_args(sc.ODIR_MAIN)



def test_olddefconfig_runs_once_per_kconfig_input(tmp_path, monkeypatch):
    """configure() keeps olddefconfig's result by its inputs: a state whose
    Kconfig files, scripts/ and Makefile equal an earlier one's is not
    configured again, and a right .config is left as it is."""
    main = tmp_path / "o-main"
    monkeypatch.setattr(sc, "G", str(tmp_path))
    monkeypatch.setattr(sc, "ODIR", str(main))
    monkeypatch.setattr(sc, "ODIR_MAIN", str(main))
    monkeypatch.setattr(sc, "ODIRS", {"sysctl=n": str(tmp_path / "o-sysctl")})
    monkeypatch.setenv("KBUILD_LINK", "LD=ld.lld")
    monkeypatch.setattr(sc, "base_config", lambda base, frag: "CONFIG_A=y")
    monkeypatch.setattr(sc, "CHECKED_OUT", ["c1"])
    monkeypatch.setattr(sc, "KCONFIG_INPUTS", {})
    listing = {"yama": "1", "kconfig": "1", "script": "1", "arch": "1"}
    monkeypatch.setattr(sc, "gitout", lambda *a: (
        "100644 blob %s\tsecurity/yama/yama_lsm.c\n"
        "100644 blob %s\tsecurity/yama/Kconfig\n"
        "100644 blob %s\tscripts/cc-version.sh\n"
        "100644 blob %s\tarch/x86/Makefile\n"
        "100644 blob 0\tMakefile" % (listing["yama"], listing["kconfig"], listing["script"],
                                      listing["arch"])))
    calls = []

    def fake_run(cmd, **kw):
        assert cmd[-1] == "olddefconfig"
        odir = [a for a in cmd if a.startswith("O=")][0][2:]
        calls.append(odir)
        with open(os.path.join(odir, ".config"), "a") as f:
            f.write("\nCONFIG_B=y # %d\n" % len(calls))
        return 0, "olddefconfig ran"
    monkeypatch.setattr(sc, "run", fake_run)

    first, out = sc.configure({}, "main", "CONFIG_X=y")
    assert len(calls) == 1 and "CONFIG_B=y # 1" in first
    cfg = main / ".config"
    os.utime(cfg, (1, 1))
    again, out = sc.configure({}, "main", "CONFIG_X=y")
    assert len(calls) == 1 and again == first and out == ""
    assert cfg.stat().st_mtime == 1, "a .config that is right was rewritten"
    cfg.write_text("something else")
    assert sc.configure({}, "main", "CONFIG_X=y")[0] == first == cfg.read_text()
    assert len(calls) == 1
    listing["yama"] = "2"       # a C file: Kconfig does not read it
    sc.CHECKED_OUT[0] = "c2"
    sc.configure({}, "main", "CONFIG_X=y")
    assert len(calls) == 1
    for what in ("kconfig", "script", "arch"):
        listing[what] = "2"
        sc.CHECKED_OUT[0] = "c3-" + what
        sc.configure({}, "main", "CONFIG_X=y")
    assert len(calls) == 4
    sc.configure({}, "main", "CONFIG_Y=y")      # another fragment
    assert len(calls) == 5
    monkeypatch.setattr(sc, "ODIR", str(tmp_path / "o-sysctl"))   # GNU ld
    sc.configure({}, "sysctl=n", "CONFIG_Y=y")
    assert len(calls) == 6
