"""Tests of the differential test's plumbing (selftests/vfs-diff): the
program builds warning-free, refuses bad options, and the vfs-diff boot's
checks (selftests/scenarios) pass on a recorded passing result channel and
fail on a recorded one with an injected fault. No QEMU here: the runs in the
guest are make selftests and make vfs-diff."""
import os
import subprocess

WS = os.environ["WS"]  # conftest.py
FIXTURES = os.path.join(WS, "tools", "tests", "fixtures")


def scenario():
    for line in open(os.path.join(WS, "selftests", "scenarios")):
        if line.startswith("vfs-diff|"):
            return line.rstrip("\n").split("|")
    raise AssertionError("no vfs-diff scenario in selftests/scenarios")


def judge(ktap, fixture):
    """The recorded result channel judged with the scenario's checks."""
    log = open(os.path.join(FIXTURES, fixture)).read()
    rc, out, r = ktap(log, "", "--programs", "1", *scenario()[2].split(), name="vfs-diff")
    return rc, out, r, log


def test_scenario_asks_for_at_least_20000_cases_of_a_fixed_seed():
    _name, cmdline, checks = scenario()
    words = dict(w.split("=", 1) for w in cmdline.split() if "=" in w)
    assert words["selftests.only"] == "yama_vfs_diff"
    assert int(words["vfsdiff.cases"]) >= 20000
    assert words["vfsdiff.seed"].isdigit()
    for group in ("symlink_trailing", "symlink_intermediate",
                  "hardlink_initial_ns", "hardlink_user_ns"):
        assert "--must-pass " + group in checks


def test_recorded_passing_run_passes_with_its_counts(ktap):
    rc, out, r, _log = judge(ktap, "vfs-diff.ktap.log")
    assert rc == 0, out
    assert (r["pass"], r["fail"]) == (4, 0)
    assert r["counts"]["vfs_diff"] == {
        "seed": 20101020, "cases": 22000, "agree": 22000, "disagree": 0,
        "seconds": r["counts"]["vfs_diff"]["seconds"]}


def test_recorded_injected_run_fails(ktap):
    # make vfs-diff VFSDIFF_SEED=20101020 VFSDIFF_CASES=22000
    #   VFSDIFF_INJECT=selftests/vfs-diff/inject/symlink-capability-override.patch
    rc, out, r, log = judge(ktap, "vfs-diff-capability-override.ktap.log")
    assert rc == 1
    assert r["counts"]["vfs_diff"]["disagree"] > 0
    assert "symlink_trailing: fail, must pass here" in out
    # Every disagreement is printed with its inputs and seed.
    assert log.count("# # DISAGREE seed 20101020 case ") == r["counts"]["vfs_diff"]["disagree"]


def test_program_builds_without_warnings(tmp_path):
    prog = str(tmp_path / "d")
    p = subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", prog,
                        os.path.join(WS, "selftests", "vfs-diff", "yama_vfs_diff.c")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # Not root in a guest: bad options are refused before anything else.
    for cases, says in (("12x", "cases=12x is not a number"), ("0", "nothing to compare")):
        p = subprocess.run([prog, "--cases", cases], capture_output=True, text=True)
        assert p.returncode == 1 and says in p.stdout, (cases, p.stdout)
