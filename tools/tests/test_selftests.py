"""Tests of selftests/ktap.py: how one selftest boot's result channel and
console are judged; and of selftests/timeout, the VM's /usr/bin/timeout.
No QEMU, no kernel: small made-up logs."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

WS = os.environ["WS"]  # conftest.py
KTAP = os.path.join(WS, "selftests", "ktap.py")

GOOD = """TAP version 13
1..2
# selftests: yama: sysctl_test
# TAP version 13
# 1..3
# # Starting 3 tests from 2 test cases.
# #  RUN           sysctl.ptrace_scope.mode_0644 ...
# #            OK  sysctl.ptrace_scope.mode_0644
# ok 1 sysctl.ptrace_scope.mode_0644
# #  RUN           sysctl.ptrace_scope.boot_value_honoured ...
# #      SKIP      no sysctl.kernel.yama.ptrace_scope= on the command line
# #            OK  sysctl.ptrace_scope.boot_value_honoured
# ok 2 # SKIP no sysctl.kernel.yama.ptrace_scope= on the command line
# #  RUN           sysctl.ptrace_scope.invalid_empty ...
# #            OK  sysctl.ptrace_scope.invalid_empty
# ok 3 sysctl.ptrace_scope.invalid_empty
ok 1 selftests: yama: sysctl_test
# selftests: yama: stacking_test
# TAP version 13
# 1..1
# #  RUN           stacking.both_enforce ...
# #            OK  stacking.both_enforce
# ok 1 stacking.both_enforce
ok 2 selftests: yama: stacking_test
# yama-selftests: end
"""

CONSOLE = """Linux version 6.12.118
rcu: \tRCU lockdep checking is enabled.
Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
Yama: ptrace_scope=1 protected_sticky_symlinks=1 protected_nonaccess_hardlinks=1
"""


def run(tmp_path, ktap=GOOD, console=CONSOLE, *args):
    (tmp_path / "ktap.log").write_text(ktap)
    (tmp_path / "console.log").write_text(console)
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, KTAP, "t", str(tmp_path / "ktap.log"),
                        str(tmp_path / "console.log"), str(out), *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, json.loads(out.read_text())


def test_good_boot_counts_and_names(tmp_path):
    rc, out, r = run(tmp_path)
    assert rc == 0, out
    assert (r["pass"], r["fail"], r["skip"]) == (3, 0, 1)
    names = [c["name"] for c in r["results"]]
    # A skip line carries no name: it comes from the RUN line before it.
    assert "sysctl.ptrace_scope.boot_value_honoured" in names
    assert r["results"][1]["reason"].startswith("no sysctl.kernel.yama")


def test_failed_case_fails(tmp_path):
    ktap = GOOD.replace("# ok 3 sysctl.ptrace_scope.invalid_empty",
                        "# not ok 3 sysctl.ptrace_scope.invalid_empty")
    ktap = ktap.replace("ok 1 selftests: yama: sysctl_test",
                        "not ok 1 selftests: yama: sysctl_test # exit=1")
    rc, out, r = run(tmp_path, ktap)
    assert rc == 1
    assert r["fail"] == 1
    assert "FAIL t/sysctl_test: sysctl.ptrace_scope.invalid_empty" in out


def test_missing_cases_and_end(tmp_path):
    # The VM died in the middle of the first program.
    ktap = GOOD.split("# ok 3")[0]
    rc, out, r = run(tmp_path, ktap)
    assert rc == 1
    assert any("programs reported" in p for p in r["problems"])
    assert any("did not reach its end" in p for p in r["problems"])


def test_console_reports_fail(tmp_path):
    for report in ("BUG: sleeping function called from invalid context",
                   "WARNING: CPU: 0 PID: 1 at fs/namei.c:1 x",
                   "WARNING: suspicious RCU usage",
                   "Kernel panic - not syncing: Fatal exception",
                   "Oops: 0000 [#1] PREEMPT SMP",
                   "BUG: KASAN: use-after-free in yama_x",
                   "UBSAN: shift-out-of-bounds in security/yama/yama_lsm.c:1:2",
                   "INFO: task yama_stress:42 blocked for more than 120 seconds."):
        rc, out, r = run(tmp_path, GOOD, CONSOLE + report + "\n")
        assert rc == 1, report
        assert any(p.startswith("console:") for p in r["problems"]), report


def test_lockdep_banner_is_not_a_report(tmp_path):
    rc, out, r = run(tmp_path)
    assert not r["problems"], r["problems"]


def test_all_skip_and_must_pass(tmp_path):
    rc, out, r = run(tmp_path, GOOD, CONSOLE, "--all-skip")
    assert rc == 1
    rc, out, r = run(tmp_path, GOOD, CONSOLE, "--must-pass",
                     "sysctl.*.boot_value_honoured")
    assert rc == 1
    assert "must pass here" in out
    rc, out, r = run(tmp_path, GOOD, CONSOLE, "--must-pass", "stacking.*",
                     "--console-must", "Yama:.ptrace_scope=1")
    assert rc == 0, out
    rc, out, r = run(tmp_path, GOOD, CONSOLE, "--console-must-not", "Yama:")
    assert rc == 1


def test_problem_and_program_count(tmp_path):
    rc, out, r = run(tmp_path, GOOD, CONSOLE, "--problem", "QEMU killed")
    assert rc == 1 and "QEMU killed" in r["problems"]
    rc, out, r = run(tmp_path, GOOD, CONSOLE, "--programs", "6")
    assert rc == 1


# run_kselftest.sh prints one plan per collection (the stress collection of
# make check-debug runs before yama): the plans add up.
TWO_COLLECTIONS = """TAP version 13
1..1
# timeout set to 600
# selftests: stress: yama_stress
# TAP version 13
# 1..1
# ok 1 stress
ok 1 selftests: stress: yama_stress
""" + GOOD


def test_plans_of_several_collections_add_up(tmp_path):
    rc, out, r = run(tmp_path, TWO_COLLECTIONS, CONSOLE, "--programs", "3")
    assert rc == 0, out
    assert r["pass"] == 4 and not r["problems"]


def test_a_collection_that_reports_too_few_programs_fails(tmp_path):
    short = TWO_COLLECTIONS[:TWO_COLLECTIONS.index("# selftests: yama: stacking_test")]
    rc, out, r = run(tmp_path, short, CONSOLE)
    assert rc != 0
    assert any("2 of 3 programs reported" in p for p in r["problems"]), r["problems"]


def test_a_bail_out_of_the_init_is_a_problem(tmp_path):
    bail = "Bail out! run_kselftest.sh -t missing:x exited with 1\n# yama-selftests: end\n"
    rc, out, r = run(tmp_path, bail, CONSOLE)
    assert rc != 0
    assert any(p.startswith("Bail out! run_kselftest.sh") for p in r["problems"]), r["problems"]


def test_count_lines_of_every_program_go_to_counts(tmp_path):
    stress = TWO_COLLECTIONS.replace(
        "# ok 1 stress\n",
        "# # stress.symlink: operations=10 judged=9 wrong=0 errors=0\n"
        "# ok 1 stress\n"
        "# # yama_stress: operations=10 judged=9 wrong=0\n")
    rc, out, r = run(tmp_path, stress, CONSOLE)
    assert rc == 0, out
    assert r["counts"]["yama_stress"] == {"operations": 10, "judged": 9, "wrong": 0}
    assert r["counts"]["stress.symlink"]["judged"] == 9


# selftests/timeout, the VM's /usr/bin/timeout, run by busybox sh with only
# busybox's applets on PATH, as in the VM.
BUSYBOX = shutil.which("busybox")
needs_busybox = pytest.mark.skipif(BUSYBOX is None, reason="no busybox (make deps)")


def vm_timeout(tmp_path, *argv):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for applet in ("sh", "setsid", "sleep", "kill", "touch", "rm"):
        if not (bindir / applet).exists():
            os.symlink(BUSYBOX, bindir / applet)
    t0 = time.monotonic()
    # stdout is a pipe, as the runner's: a process left holding it would
    # keep communicate() waiting.
    p = subprocess.run([BUSYBOX, "sh", os.path.join(WS, "selftests", "timeout"), *argv],
                       env={"PATH": str(bindir)}, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=60)
    return p.returncode, p.stdout, time.monotonic() - t0


@needs_busybox
def test_vm_timeout_kills_the_program_and_what_it_left_running(tmp_path):
    rc, out, secs = vm_timeout(tmp_path, "--foreground", "2", "sh", "-c",
                               "sleep 100 & echo started; sleep 100")
    assert rc == 124 and out == "started\n"
    assert secs < 20


@needs_busybox
def test_vm_timeout_passes_exit_codes_through(tmp_path):
    assert vm_timeout(tmp_path, "5", "sh", "-c", "exit 4")[0] == 4
    assert vm_timeout(tmp_path, "5", "sh", "-c", "echo hi")[:2] == (0, "hi\n")
    # killed by something else than the time limit: not a TIMEOUT
    assert vm_timeout(tmp_path, "5", "sh", "-c", "kill -TERM $$")[0] == 143


def test_a_program_the_runner_started_but_never_reported_fails(tmp_path):
    hung = GOOD.replace("ok 2 selftests: yama: stacking_test\n# yama-selftests: end\n", "")
    rc, out, r = run(tmp_path, hung, CONSOLE)
    assert rc != 0
    assert any("stacking_test failed: started, no result" in p for p in r["problems"]), r["problems"]
