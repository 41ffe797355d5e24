"""Tests of the differential test's plumbing (selftests/vfs-diff): the
program builds warning-free, refuses bad options, and the vfs-diff boot's
checks (selftests/scenarios) pass on a recorded passing result channel and
fail on a recorded one with an injected fault. No QEMU here: the runs in the
guest are make selftests and make vfs-diff."""
import json
import os
import subprocess
import sys

WS = os.environ["WS"]  # conftest.py
FIXTURES = os.path.join(WS, "tools", "tests", "fixtures")
SRC = os.path.join(WS, "selftests", "vfs-diff", "yama_vfs_diff.c")
KTAP = os.path.join(WS, "selftests", "ktap.py")


def scenario():
    for line in open(os.path.join(WS, "selftests", "scenarios")):
        if line.startswith("vfs-diff|"):
            return line.rstrip("\n").split("|")
    raise AssertionError("no vfs-diff scenario in selftests/scenarios")


def judge(tmp_path, log):
    _name, _cmdline, checks = scenario()
    out = tmp_path / "r.json"
    (tmp_path / "console.log").write_text("")
    p = subprocess.run([sys.executable, KTAP, "vfs-diff", log,
                        str(tmp_path / "console.log"), str(out),
                        "--programs", "1", *checks.split()],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, json.load(open(out))


def test_scenario_asks_for_at_least_20000_cases_of_a_fixed_seed():
    _name, cmdline, checks = scenario()
    words = dict(w.split("=", 1) for w in cmdline.split() if "=" in w)
    assert words["selftests.only"] == "yama_vfs_diff"
    assert int(words["vfsdiff.cases"]) >= 20000
    assert words["vfsdiff.seed"].isdigit()
    for group in ("symlink_trailing", "symlink_intermediate",
                  "hardlink_initial_ns", "hardlink_user_ns"):
        assert "--must-pass " + group in checks


def test_recorded_passing_run_passes_with_its_counts(tmp_path):
    rc, out, r = judge(tmp_path, os.path.join(FIXTURES, "vfs-diff.ktap.log"))
    assert rc == 0, out
    assert (r["pass"], r["fail"]) == (4, 0)
    assert r["counts"]["vfs_diff"] == {
        "seed": 20101020, "cases": 22000, "agree": 22000, "disagree": 0,
        "seconds": r["counts"]["vfs_diff"]["seconds"]}


def test_recorded_injected_run_fails(tmp_path):
    # make vfs-diff VFSDIFF_SEED=20101020 VFSDIFF_CASES=22000
    #   VFSDIFF_INJECT=selftests/vfs-diff/inject/symlink-capability-override.patch
    rc, out, r = judge(tmp_path, os.path.join(
        FIXTURES, "vfs-diff-capability-override.ktap.log"))
    assert rc == 1
    assert r["counts"]["vfs_diff"]["disagree"] > 0
    assert "symlink_trailing: fail, must pass here" in out
    # Every disagreement is printed with its inputs and seed.
    log = open(os.path.join(FIXTURES, "vfs-diff-capability-override.ktap.log")).read()
    assert log.count("# # DISAGREE seed 20101020 case ") == r["counts"]["vfs_diff"]["disagree"]


def test_program_builds_without_warnings(tmp_path):
    p = subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-o", str(tmp_path / "d"), SRC],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # Not root in a guest: bad options are refused before anything else.
    p = subprocess.run([str(tmp_path / "d"), "--cases", "12x"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "cases=12x is not a number" in p.stdout
    p = subprocess.run([str(tmp_path / "d"), "--cases", "0"],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "nothing to compare" in p.stdout
