"""The config fragments of the two kernels of the workspace: the test
kernel (make selftests: tools/test-kernel --fragments, the minimal QEMU
config and the cheap runtime checks, then the tree's
tools/testing/selftests/yama/config) and the debug kernel of make
check-debug (the same plus extra/kasan and extra/check-debug). Which
runtime checks each kernel has is decided here, in the fragments; which
Yama options the tests need, in the tree's config, which the series adds
(make kunit's kernel is kunit.py's, from the tree's .kunitconfig).
merge_config.sh -s then proves that each option stuck."""
import os
import re
import subprocess

from test_reliability import new_file_of_series

WS = os.environ["WS"]  # conftest.py
EXTRA = os.path.join(WS, "selftests", "config", "extra")
LINE = re.compile(r"^(?:CONFIG_(\w+)=(.*)|# CONFIG_(\w+) is not set)$")


TREE_CONFIG = "tools/testing/selftests/yama/config"


def workspace_fragments():
    frags = subprocess.run([os.path.join(WS, "tools", "test-kernel"), "--fragments"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert frags, "tools/test-kernel --fragments named no fragment"
    return frags


def parse(text, name, out):
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if m:
            sym, val = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), "n")
            out.setdefault(sym, {}).setdefault(val, []).append(name)
    return out


def settings(extra, tree=False):
    """{symbol: {value: [fragment, ...]}} over the test kernel's fragments
    and those of extra/; with tree, the tree's selftests config too (as
    the series' last patch adds it), merged last as tools/test-kernel
    does."""
    out = {}
    for p in workspace_fragments() + [os.path.join(EXTRA, f) for f in extra]:
        parse(open(p).read(), os.path.relpath(p, WS), out)
    if tree:
        parse(new_file_of_series(TREE_CONFIG), TREE_CONFIG, out)
    return out


def test_the_test_kernel_has_the_cheap_checks_and_not_lockdep():
    s = settings([])
    for sym in ("DEBUG_ATOMIC_SLEEP", "DEBUG_LIST", "PREEMPT", "BUG"):
        assert list(s.get(sym, {})) == ["y"], sym
    # lockdep and PROVE_RCU are make check-debug's (README: the checks that moved)
    for sym in ("PROVE_LOCKING", "PROVE_RCU", "LOCKDEP", "DEBUG_LOCK_ALLOC", "KASAN"):
        assert sym not in s, "%s is set in %s" % (sym, s[sym])
    # nor KUnit: make kunit runs the suites in kunit.py's kernel of its own
    s = settings([], tree=True)
    assert not [sym for sym in s if "KUNIT" in sym], s


def test_the_test_kernel_is_the_minimal_config_and_the_runtime_checks():
    names = [os.path.relpath(p, WS) for p in workspace_fragments()]
    assert names == ["selftests/config/qemu-x86_64.config",
                     "selftests/config/runtime-checks.config"]


def test_the_yama_options_come_from_the_trees_config():
    """Every option the selftests need is in the tree's config (a target's
    config, as kernel CI merges it on a minimal kernel); the workspace's
    fragments set no option of Yama or of another LSM, so the tree's
    config is the one home of them."""
    tree = settings([], tree=True)
    for sym in ("SECURITY", "SECURITY_PATH", "SECURITY_YAMA", "SECURITY_YAMA_SYMLINKS",
                "SECURITY_YAMA_HARDLINKS", "PROC_SYSCTL", "SECURITY_LANDLOCK", "AUDIT",
                "NET", "NAMESPACES", "USER_NS", "TMPFS"):
        vals = tree.get(sym, {})
        assert list(vals) == ["y"] and TREE_CONFIG in vals["y"], (sym, vals)
    ws = settings(["kasan.config", "check-debug.config"])
    lsm = [sym for sym in ws if sym.startswith(("SECURITY", "LSM", "DEFAULT_SECURITY"))
           and sym != "SECURITY_YAMA_KUNIT_TEST"]     # check-debug's KUnit at boot
    assert not lsm, {sym: ws[sym] for sym in lsm}


def test_the_debug_kernel_has_lockdep_prove_rcu_and_kasan():
    s = settings(["kasan.config", "check-debug.config"])
    for sym in ("PROVE_LOCKING", "PROVE_RCU", "KASAN", "KFENCE", "DEBUG_ATOMIC_SLEEP",
                "DEBUG_OBJECTS_RCU_HEAD"):
        assert list(s.get(sym, {})) == ["y"], sym


def test_no_option_is_asked_for_with_two_values():
    # merge_config.sh -s fails on an option a later fragment redefines
    s = settings(sorted(f for f in os.listdir(EXTRA) if f.endswith(".config")), tree=True)
    both = {sym: vals for sym, vals in s.items() if len(vals) > 1}
    assert not both, both
