"""Tests of selftests/bench/report.py: it reads the bench boot's result
channel and the workspace runs. No test here looks at a time value."""
import json
import os
import subprocess
import sys

WS = os.environ["WS"]  # conftest.py
REPORT = os.path.join(WS, "selftests", "bench", "report.py")


def channel(tmp_path, prof_off_hits=100, end=True):
    lines = ["I kernel 6.12.118+", "I N stat=10 hardlink=10 ptrace=10 prof=100 rounds=2",
             "I filter try_to_unlazy path_lookupat try_to_unlazy_next"]
    for b in ("symlink", "symlink-dirowner", "midlink", "hardlink"):
        for rnd in (1, 2):
            for v in ("yama", "off", "vfs"):
                lines.append(f"R {rnd} {b} {v} {100 + rnd}.0")
    for d in (1, 16):
        for rnd in (1, 2):
            for v in ("scope1", "scope0"):
                lines.append(f"R {rnd} ptrace-depth{d} {v} 50.0")
    for b in ("symlink", "symlink-dirowner", "midlink"):
        lines.append(f"P 1 {b} yama try_to_unlazy 100")
        lines.append(f"P 1 {b} off try_to_unlazy {prof_off_hits}")
        lines.append(f"P 1 {b} yama path_lookupat 100")
        lines.append(f"P 1 {b} off path_lookupat 100")
        lines.append(f"P 1 {b} yama some_other_function 7")
        lines.append(f"P 1 {b} off some_other_function 9")
    if end:
        lines.append("END")
    p = tmp_path / "results.txt"
    p.write_text("\r\n".join(lines) + "\r\n")
    m = tmp_path / "machine.json"
    m.write_text(json.dumps({"cpu": "test", "cores": 2, "accel": "tcg"}))
    return p, m


def run(*args):
    return subprocess.run([sys.executable, REPORT, *map(str, args)],
                          capture_output=True, text=True)


def test_complete_run_has_no_problem(tmp_path):
    p, m = channel(tmp_path)
    r = run("kernel", p, tmp_path / "k", m)
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


def test_unequal_fallback_counts_are_a_problem(tmp_path):
    p, m = channel(tmp_path, prof_off_hits=99)
    r = run("kernel", p, tmp_path / "k", m)
    assert r.returncode == 1
    assert "try_to_unlazy hit [100] times with Yama on, [99] with Yama off" in r.stdout


def test_boot_without_end_is_a_problem(tmp_path):
    p, m = channel(tmp_path, end=False)
    r = run("kernel", p, tmp_path / "k", m)
    assert r.returncode == 1
    assert "did not reach END" in r.stdout


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
    log = tmp_path / "make.log"
    log.write_text("== tree: base linux-source-6.12 + series/ -> build/linux\n"
                   "== tree: pass (10 passed, 0 failed) in 32s\n"
                   "== series-check: pass (55 passed, 0 failed) in 900s\n"
                   "== kunit: pass (14 passed, 0 failed) in 80s: the test kernel's config\n"
                   "== posting: fail (0 passed, 1 failed) in 20s: see the error above\n")
    rec = tmp_path / "records"
    env = dict(os.environ, BENCH_RECORDS=str(rec), HOW="a test", WALL="1100",
               LOAD="1.0")
    p = subprocess.run([os.path.join(WS, "tools", "bench"), "--record-check", "make-cold",
                        "--from", str(log)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [l.split("\t") for l in (rec / "check-make-cold.tsv").read_text().splitlines()]
    assert rows == [["tree", "pass", "10", "0", "32"], ["series-check", "pass", "55", "0", "900"],
                    ["kunit", "pass", "14", "0", "80"], ["posting", "fail", "0", "1", "20"]]
    meta = (rec / "check-make-cold.meta").read_text().splitlines()
    assert "wall=1100" in meta
    assert "result=failed: posting" in meta
    log.write_text("== tree: pass (10 passed, 0 failed) in 32s\n"
                   "== kunit: pass (14 passed, 0 failed) in 80s\n")
    p = subprocess.run([os.path.join(WS, "tools", "bench"), "--record-check", "make-cold",
                        "--from", str(log)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "result=every stage passed (2 stages)" in \
        (rec / "check-make-cold.meta").read_text().splitlines()
    # a stage that died before its closing line: make's own error line
    log.write_text("== tree: pass (10 passed, 0 failed) in 32s\n"
                   "== series-check: skip (0 passed, 0 failed) in 1s: no patch\n"
                   "== kunit: KUnit suites of security/yama under qemu-system-x86_64\n"
                   "make: *** [Makefile:25: all] Error 1\n")
    p = subprocess.run([os.path.join(WS, "tools", "bench"), "--record-check", "make-cold",
                        "--from", str(log)], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "result=make stopped with an error; 1 of 2 stages passed; skipped:" \
        " series-check" in (rec / "check-make-cold.meta").read_text().splitlines()
    log.write_text("nothing of make here\n")
    p = subprocess.run([os.path.join(WS, "tools", "bench"), "--record-check", "make-cold",
                        "--from", str(log)], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "no summary table" in p.stderr
