"""The config fragments of the two kernels of the workspace: the test
kernel (make kunit, make selftests: tools/test-kernel --fragments) and the
debug kernel of make check-debug (the same plus extra/kasan and
extra/check-debug). Which runtime checks each kernel has is decided here,
in the fragments; merge_config.sh -s then proves that each option stuck."""
import os
import re
import subprocess

WS = os.environ["WS"]  # conftest.py
EXTRA = os.path.join(WS, "selftests", "config", "extra")
LINE = re.compile(r"^(?:CONFIG_(\w+)=(.*)|# CONFIG_(\w+) is not set)$")


def settings(extra):
    """{symbol: {value: [fragment, ...]}} over the test kernel's fragments
    and those of extra/."""
    frags = subprocess.run([os.path.join(WS, "tools", "test-kernel"), "--fragments"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert frags, "tools/test-kernel --fragments named no fragment"
    out = {}
    for p in frags + [os.path.join(EXTRA, f) for f in extra]:
        for line in open(p).read().splitlines():
            m = LINE.match(line.strip())
            if m:
                sym, val = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), "n")
                out.setdefault(sym, {}).setdefault(val, []).append(os.path.relpath(p, WS))
    return out


def test_the_test_kernel_has_the_cheap_checks_and_not_lockdep():
    s = settings([])
    for sym in ("DEBUG_ATOMIC_SLEEP", "DEBUG_LIST", "PREEMPT", "BUG"):
        assert list(s.get(sym, {})) == ["y"], sym
    # lockdep and PROVE_RCU are make check-debug's (README: the checks that moved)
    for sym in ("PROVE_LOCKING", "PROVE_RCU", "LOCKDEP", "DEBUG_LOCK_ALLOC", "KASAN"):
        assert sym not in s, "%s is set in %s" % (sym, s[sym])


def test_the_debug_kernel_has_lockdep_prove_rcu_and_kasan():
    s = settings(["kasan.config", "check-debug.config"])
    for sym in ("PROVE_LOCKING", "PROVE_RCU", "KASAN", "KFENCE", "DEBUG_ATOMIC_SLEEP",
                "DEBUG_OBJECTS_RCU_HEAD"):
        assert list(s.get(sym, {})) == ["y"], sym


def test_no_option_is_asked_for_with_two_values():
    s = settings(sorted(f for f in os.listdir(EXTRA) if f.endswith(".config")))
    both = {sym: vals for sym, vals in s.items() if len(vals) > 1}
    assert not both, both
