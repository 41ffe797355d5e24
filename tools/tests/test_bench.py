"""Tests of selftests/bench/report.py: it reads the bench boot's result
channel and the workspace runs. No test here looks at a time value."""
import json
import os
import subprocess
import sys

import pytest

WS = os.environ["WS"]  # conftest.py
REPORT = os.path.join(WS, "selftests", "bench", "report.py")


def run(*args):
    return subprocess.run([sys.executable, REPORT, *map(str, args)],
                          capture_output=True, text=True)


def report_kernel(tmp_path, prof_off_hits=100, end=True):
    """report.py kernel on a made-up result channel of a complete bench boot."""
    lines = ["I kernel 6.12.118+", "I N stat=10 hardlink=10 ptrace=10 prof=100 rounds=2",
             "I filter try_to_unlazy path_lookupat try_to_unlazy_next"]
    lines += [f"R {rnd} {b} {v} {100 + rnd}.0"
              for b in ("symlink", "symlink-dirowner", "midlink", "hardlink")
              for rnd in (1, 2) for v in ("yama", "off", "vfs")]
    lines += [f"R {rnd} ptrace-depth{d} {v} 50.0"
              for d in (1, 16) for rnd in (1, 2) for v in ("scope1", "scope0")]
    for b in ("symlink", "symlink-dirowner", "midlink"):
        for fn, on, off in (("try_to_unlazy", 100, prof_off_hits), ("path_lookupat", 100, 100),
                            ("some_other_function", 7, 9)):
            lines += [f"P 1 {b} yama {fn} {on}", f"P 1 {b} off {fn} {off}"]
    (tmp_path / "results.txt").write_text("\r\n".join(lines + ["END"] * end) + "\r\n")
    (tmp_path / "machine.json").write_text(
        json.dumps({"cpu": "test", "cores": 2, "accel": "tcg"}))
    return run("kernel", tmp_path / "results.txt", tmp_path / "k", tmp_path / "machine.json")


def test_complete_run_has_no_problem(tmp_path):
    r = report_kernel(tmp_path)
    assert r.returncode == 0, r.stdout
    data = json.loads((tmp_path / "k.json").read_text())
    assert [row["bench"] for row in data["stat"]] == [
        "symlink", "symlink-dirowner", "midlink", "hardlink"]
    assert all(row["rounds"] == 2 for row in data["stat"])
    assert [row["depth"] for row in data["ptrace"]] == [1, 16]
    # Only the filter's functions count; one with no hit shows as 0.
    fns = {row["function"] for row in data["rcu_walk"]}
    assert fns == {"try_to_unlazy", "path_lookupat", "try_to_unlazy_next"}
    assert "PROBLEM" not in r.stdout


@pytest.mark.parametrize("damage,says", [
    ({"prof_off_hits": 99},
     "try_to_unlazy hit [100] times with Yama on, [99] with Yama off"),
    ({"end": False}, "did not reach END")], ids=["unequal-fallbacks", "no-end"])
def test_a_damaged_channel_is_a_problem(tmp_path, damage, says):
    r = report_kernel(tmp_path, **damage)
    assert r.returncode == 1 and says in r.stdout, r.stdout


def test_workspace_table_reads_recorded_runs(tmp_path, monkeypatch):
    rec = tmp_path / "records"
    rec.mkdir()
    (rec / "check-cold-before.tsv").write_text("tree\tpass\t0\t0\t90\nkunit\tpass\t5\t0\t300\n")
    (rec / "check-cold.tsv").write_text("tree\tpass\t0\t0\t30\nkunit\tpass\t5\t0\t100\n")
    (rec / "check-cold.meta").write_text("wall=140\nload=1.5\n")
    (tmp_path / "loops.tsv").write_text(
        "kunit\tbefore\t0\t99.0\tpass 14 0 (exit 0)\t1.0\n"   # warm-up: not counted
        "kunit\tbefore\t1\t30.0\tpass 14 0 (exit 0)\t1.0\n"
        "kunit\tafter\t1\t12.0\tpass 14 0 (exit 0)\t1.1\n"
        "kunit\tbefore\t2\t32.0\tpass 14 0 (exit 0)\t1.2\n"
        "kunit\tafter\t2\t14.0\tpass 14 0 (exit 0)\t1.3\n"
        "kunit\tbefore\t3\t40.0\tpass 14 0 (exit 0)\t1.4\n"
        "kunit\tafter\t3\t16.0\tfail 13 1 (exit 1)\t1.5\n")
    monkeypatch.setenv("BENCH_RECORDS", str(rec))
    r = run("workspace", tmp_path, tmp_path / "w")
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp_path / "w.json").read_text())
    k = data["loops"]["kunit"]
    assert (k["before"], k["after"], k["runs"]) == (32.0, 14.0, 3)
    assert abs(k["ratio"] - 14.0 / 32.0) < 1e-9
    # 14 s is under the 15 s target, but a run failed: not met
    assert k["failed_runs"] == 1 and "FAILED RUN: kunit after run 3" in r.stdout
    assert not k["met"] and "MISSED" in r.stdout
    c = data["records"]["cold"]
    # The recorded wall time when there is one, else the sum of the stages.
    assert c["wall"] == {"before": 390, "after": 140}
    assert abs(c["ratio"] - 140 / 390) < 1e-9 and c["met"]
    assert "selftests" not in data["loops"]   # not measured: no row
    assert "before = the workspace before the speed work" in r.stdout
    # A make bench with BENCH_BEFORE names that commit as the before side.
    (tmp_path / "loops.before").write_text("4ed7726 tools: the speed work\n")
    r = run("workspace", tmp_path, tmp_path / "w")
    assert "before = commit 4ed7726 tools: the speed work," in r.stdout


def test_record_of_a_plain_make_takes_its_stage_lines(tmp_path):
    """tools/bench --record-check make-cold --from LOG: a make (no summary
    table) is recorded from each stage's closing line, WALL its seconds."""
    rec = tmp_path / "records"

    def record(*lines):
        (tmp_path / "make.log").write_text("".join(l + "\n" for l in lines))
        return subprocess.run([os.path.join(WS, "tools", "bench"), "--record-check",
                               "make-cold", "--from", str(tmp_path / "make.log")],
                              env=dict(os.environ, BENCH_RECORDS=str(rec), HOW="a test",
                                       WALL="1100", LOAD="1.0"), capture_output=True, text=True)

    def meta(p):
        assert p.returncode == 0, p.stdout + p.stderr
        return (rec / "check-make-cold.meta").read_text().splitlines()

    m = meta(record("== tree: base linux-6.12 + series/ -> build/linux",
                    "== tree: pass (10 passed, 0 failed) in 32s",
                    "== series-check: pass (55 passed, 0 failed) in 900s",
                    "== kunit: pass (14 passed, 0 failed) in 80s: the test kernel's config",
                    "== posting: fail (0 passed, 1 failed) in 20s: see the error above"))
    rows = [l.split("\t") for l in (rec / "check-make-cold.tsv").read_text().splitlines()]
    assert rows == [["tree", "pass", "10", "0", "32"], ["series-check", "pass", "55", "0", "900"],
                    ["kunit", "pass", "14", "0", "80"], ["posting", "fail", "0", "1", "20"]]
    assert "wall=1100" in m and "result=failed: posting" in m
    m = meta(record("== tree: pass (10 passed, 0 failed) in 32s",
                    "== kunit: pass (14 passed, 0 failed) in 80s"))
    assert "result=every stage passed (2 stages)" in m
    # a stage that died before its closing line: make's own error line
    m = meta(record("== tree: pass (10 passed, 0 failed) in 32s",
                    "== series-check: skip (0 passed, 0 failed) in 1s: no patch",
                    "== kunit: KUnit suites of security/yama (kunit.py run "
                    "--kunitconfig=security/yama) under qemu-system-x86_64",
                    "make: *** [Makefile:25: all] Error 1"))
    assert "result=make stopped with an error; 1 of 2 stages passed; skipped: series-check" in m
    p = record("nothing of make here")
    assert p.returncode != 0 and "no summary table" in p.stderr
