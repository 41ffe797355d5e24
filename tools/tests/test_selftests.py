"""Tests of selftests/ktap.py: how one selftest boot's result channel and
console are judged; and of selftests/timeout, the VM's /usr/bin/timeout.
No QEMU, no kernel: small made-up logs."""
import os
import shutil
import subprocess
import time

import pytest

WS = os.environ["WS"]  # conftest.py

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


def test_good_boot_counts_and_names(ktap):
    rc, out, r = ktap(GOOD, CONSOLE)
    assert rc == 0, out
    assert (r["pass"], r["fail"], r["skip"]) == (3, 0, 1)
    # A skip line carries no name: it comes from the RUN line before it.
    assert "sysctl.ptrace_scope.boot_value_honoured" in [c["name"] for c in r["results"]]
    assert r["results"][1]["reason"].startswith("no sysctl.kernel.yama")
    assert not r["problems"], r["problems"]    # the lockdep banner is not a report


def test_failed_case_fails(ktap):
    ktap_log = GOOD.replace("# ok 3 sysctl.ptrace_scope.invalid_empty",
                            "# not ok 3 sysctl.ptrace_scope.invalid_empty")
    ktap_log = ktap_log.replace("ok 1 selftests: yama: sysctl_test",
                                "not ok 1 selftests: yama: sysctl_test # exit=1")
    rc, out, r = ktap(ktap_log, CONSOLE)
    assert rc == 1 and r["fail"] == 1
    assert "FAIL t/sysctl_test: sysctl.ptrace_scope.invalid_empty" in out


@pytest.mark.parametrize("log,problems", [
    # The VM died in the middle of the first program.
    (GOOD.split("# ok 3")[0], ["programs reported", "did not reach its end"]),
    (TWO_COLLECTIONS[:TWO_COLLECTIONS.index("# selftests: yama: stacking_test")],
     ["2 of 3 programs reported"]),
    ("Bail out! run_kselftest.sh -t missing:x exited with 1\n# yama-selftests: end\n",
     ["Bail out! run_kselftest.sh"]),
    (GOOD.replace("ok 2 selftests: yama: stacking_test\n# yama-selftests: end\n", ""),
     ["stacking_test failed: started, no result"]),
], ids=["died-midway", "too-few-programs", "bail-out-of-init", "started-never-reported"])
def test_a_broken_result_channel_is_a_problem(ktap, log, problems):
    rc, out, r = ktap(log, CONSOLE)
    assert rc == 1
    for want in problems:
        assert any(want in p for p in r["problems"]), (want, r["problems"])


@pytest.mark.parametrize("report", [
    "BUG: sleeping function called from invalid context",
    "WARNING: CPU: 0 PID: 1 at fs/namei.c:1 x",
    "WARNING: suspicious RCU usage",
    "Kernel panic - not syncing: Fatal exception",
    "Oops: 0000 [#1] PREEMPT SMP",
    "BUG: KASAN: use-after-free in yama_x",
    "UBSAN: shift-out-of-bounds in security/yama/yama_lsm.c:1:2",
    "INFO: task yama_stress:42 blocked for more than 120 seconds."])
def test_console_reports_fail(ktap, report):
    rc, out, r = ktap(GOOD, CONSOLE + report + "\n")
    assert rc == 1
    assert any(p.startswith("console:") for p in r["problems"]), r["problems"]


@pytest.mark.parametrize("args,problem", [
    (["--all-skip"], "pass without Yama (must skip)"),
    (["--must-pass", "sysctl.*.boot_value_honoured"], "must pass here"),
    (["--must-pass", "stacking.*", "--console-must", "Yama:.ptrace_scope=1"], None),
    (["--console-must-not", "Yama:"], "console has /Yama:/"),
    (["--problem", "QEMU killed"], "QEMU killed"),
    (["--programs", "6"], "planned 2 programs, expected 6"),
])
def test_options_of_the_scenario(ktap, args, problem):
    rc, out, r = ktap(GOOD, CONSOLE, *args)
    if problem is None:
        assert rc == 0 and not r["problems"], out
    else:
        assert rc == 1 and any(problem in p for p in r["problems"]), r["problems"]
        assert problem in out


def test_plans_of_several_collections_add_up(ktap):
    rc, out, r = ktap(TWO_COLLECTIONS, CONSOLE, "--programs", "3")
    assert rc == 0, out
    assert r["pass"] == 4 and not r["problems"]


def test_count_lines_of_every_program_go_to_counts(ktap):
    stress = TWO_COLLECTIONS.replace(
        "# ok 1 stress\n",
        "# # stress.symlink: operations=10 judged=9 wrong=0 errors=0\n"
        "# ok 1 stress\n"
        "# # yama_stress: operations=10 judged=9 wrong=0\n")
    rc, out, r = ktap(stress, CONSOLE)
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
