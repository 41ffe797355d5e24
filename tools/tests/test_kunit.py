"""Tests of tools/kunit (make kunit) and tools/test-kernel on a fake tree.
make kunit is `kunit.py run --kunitconfig=security/yama` in the tree: the
fake kunit.py (FAKE) takes kunit.py run's options, reads the kunitconfig
it is given and writes a console log and a --json file the way kunit.py
does, with results chosen by FAKE_KUNIT. tools/test-kernel builds the
kernel make selftests boots, from the workspace's minimal fragments and
the tree's selftests config (a fake merge_config.sh and Makefile). No
kernel is built or booted."""
import collections
import json
import os
import pathlib
import subprocess
import textwrap

import pytest

WS = pathlib.Path(os.environ["WS"])  # conftest.py

FAKE = textwrap.dedent(r"""
    import argparse, json, os, sys
    # kunit.py run's options that tools/kunit passes (an unknown one fails,
    # as with kunit.py's own argparse)
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--arch")
    run.add_argument("--kunitconfig", action="append")
    run.add_argument("--build_dir", default=".kunit")
    run.add_argument("--make_options", action="append")
    run.add_argument("--jobs", type=int)
    run.add_argument("--timeout", type=int)
    run.add_argument("--qemu_args", action="append")
    run.add_argument("--json", nargs="?", const="stdout")
    run.add_argument("filter_glob", nargs="?", default="")
    a = p.parse_args()
    build, js = a.build_dir, a.json
    mode = os.environ.get("FAKE_KUNIT", "pass")
    os.makedirs(build, exist_ok=True)
    with open(os.path.join(build, "args"), "w") as f:
        f.write("\n".join(sys.argv[1:]))
    with open(os.path.join(build, "env"), "w") as f:
        json.dump({"cwd": os.getcwd(), "MAKEFLAGS": os.environ.get("MAKEFLAGS")}, f)
    # kunit.py: a --kunitconfig that is a folder means its .kunitconfig;
    # the build folder's .kunitconfig is what it configures from
    conf = ""
    for k in a.kunitconfig or []:
        conf += open(os.path.join(k, ".kunitconfig") if os.path.isdir(k) else k).read()
    with open(os.path.join(build, ".kunitconfig"), "w") as f:
        f.write(conf)
    if mode == "error":
        print("ERROR: the make command failed")
        sys.exit(1)
    status = {"pass": "PASS", "fail": "FAIL", "crash": "ERROR",
              "skip": "SKIP", "splat": "PASS"}[mode]
    console = ["KTAP version 1", "1..1", "    ok 1 first",
               "    %s 2 second" % ("ok" if status in ("PASS", "SKIP") else "not ok")]
    if mode == "splat":
        console.insert(2, "BUG: sleeping function called from invalid context")
    with open(os.path.join(build, "test.log"), "w") as f:
        f.write("\n".join(console) + "\n")
    cases = [{"name": "first", "status": "SKIP" if mode == "skip" else "PASS"},
             {"name": "second", "status": status}]
    suite = {"name": "yama_fake", "sub_groups": [], "test_cases": cases}
    with open(js, "w") as f:
        json.dump({"name": "KUnit Test Group", "sub_groups": [suite], "test_cases": []}, f)
    sys.exit(1 if status in ("FAIL", "ERROR") else 0)
""")


MERGE = textwrap.dedent(r"""
    #!/bin/sh
    while [ $# -gt 0 ]; do
        case $1 in -O) out=$2; shift 2 ;; -*) shift ;; *) break ;; esac
    done
    # the fragments, each after a line naming it
    for f in "$@"; do echo "# fragment $f"; cat "$f"; done >"$out/.config"
    # FAKE_MERGE_RM: a file removed while the config is made.
    [ -z "$FAKE_MERGE_RM" ] || rm -f "$FAKE_MERGE_RM"
""").lstrip()


# What tools/test-kernel builds with: make bzImage, out of tree. The fake
# records its command line; FAKE_BUILD=fail makes it fail, FAKE_EDIT touches
# a file while it runs.
MAKEFILE = (
    "bzImage:\n"
    "\t@test \"$$FAKE_BUILD\" != fail || { echo 'fake.c:1: error: broken'; exit 1; }\n"
    "\t@test -z \"$$FAKE_EDIT\" || touch \"$$FAKE_EDIT\"\n"
    "\t@mkdir -p $(O)/arch/x86/boot && echo '$(MAKEFLAGS)' >$(O)/make-args"
    " && touch $(O)/arch/x86/boot/bzImage\n")

# The tree's own KUnit config (security/yama/.kunitconfig, from the
# series' KUnit patch) and the selftests' config (the target's config).
KUNITCONFIG = "CONFIG_KUNIT=y\nCONFIG_SECURITY_YAMA=y\nCONFIG_SECURITY_YAMA_KUNIT_TEST=y\n"
SELFTESTS_CONFIG = "CONFIG_SECURITY_YAMA=y\nCONFIG_FAKE_SELFTESTS=y\n"


@pytest.fixture
def fake(tmp_path):
    """A tree with what tools/kunit and tools/test-kernel need of it:
    kunit.py (FAKE), Yama's Kconfig and .kunitconfig, a git tree, the
    selftests' config, merge_config.sh (here: the fragments, joined) and a
    Makefile (MAKEFILE)."""
    tree = tmp_path / "linux"
    for path, text in (("tools/testing/kunit/kunit.py", FAKE),
                       ("security/yama/Kconfig", "config SECURITY_YAMA_KUNIT_TEST\n\tbool\n"),
                       ("security/yama/.kunitconfig", KUNITCONFIG),
                       ("tools/testing/selftests/yama/config", SELFTESTS_CONFIG),
                       ("scripts/kconfig/merge_config.sh", MERGE), ("Makefile", MAKEFILE)):
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    (tree / "scripts/kconfig/merge_config.sh").chmod(0o755)
    (tree / ".git").mkdir()
    return tmp_path


def run(top, mode, **extra):
    """tools/kunit on the fake tree, kunit.py's results chosen by mode."""
    env = dict(os.environ, BUILD=str(top), TREE=str(top / "linux"), FAKE_KUNIT=mode, **extra)
    return subprocess.run([str(WS / "tools/kunit")], env=env, text=True, capture_output=True)


def results(top):
    return json.loads((top / "results/kunit.json").read_text())["default"]


def test_pass(fake):
    proc = run(fake, "pass", MAKEFLAGS="-j8 --jobserver-auth=3,4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "== kunit: pass (2 passed, 0 failed)" in proc.stdout
    assert (results(fake)["passed"], results(fake)["bad_cases"]) == (2, [])
    assert "yama_fake" in proc.stdout
    assert (fake / "kunit/default/ktap.log").read_text().startswith("KTAP")
    # kunit.py's console, copied next to the results
    assert (fake / "kunit/default/test.log").read_text() == \
        (fake / "kunit/kernel/test.log").read_text()
    # kunit.py run, in the tree, as a maintainer runs it: the tree's
    # security/yama as the kunitconfig (by absolute path), kunit.py's own
    # build folder under $BUILD/kunit, ccache and the workspace's linker,
    # only Yama's suites; no sub-make flags of the workspace's make.
    kout = fake / "kunit/kernel"
    args = (kout / "args").read_text().split("\n")
    assert args[0] == "run"
    assert "--arch=x86_64" in args
    assert [a for a in args if a.startswith("--kunitconfig")] == [
        "--kunitconfig=%s" % (fake / "linux/security/yama")]
    assert "--build_dir=%s" % kout in args
    assert [a for a in args if a.startswith("--make_options")] == [
        "--make_options=CC=ccache gcc", "--make_options=LD=ld.lld"]
    assert "--jobs=2" in args and "--timeout=600" in args
    assert "--json=%s" % (fake / "kunit/default/results.json") in args
    assert args[-1] == "yama*"
    assert "-enable-kvm" not in " ".join(args)
    env = json.loads((kout / "env").read_text())
    assert env == {"cwd": str(fake / "linux"), "MAKEFLAGS": None}
    # The tree's .kunitconfig is the whole KUnit config: nothing of the
    # workspace's test kernel (its fragments, the selftests' config) is
    # added, and tools/test-kernel builds nothing for make kunit.
    assert (kout / ".kunitconfig").read_text() == KUNITCONFIG
    assert not (fake / "kernel").exists()


def test_options_of_the_run(fake):
    """KUNIT_FILTER, KUNIT_TIMEOUT, JOBS and KVM=1 reach kunit.py run."""
    proc = run(fake, "pass", KUNIT_FILTER="yama_sysctl*", KUNIT_TIMEOUT="30", JOBS="5", KVM="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    args = (fake / "kunit/kernel/args").read_text().split("\n")
    assert args[-1] == "yama_sysctl*"
    assert "--timeout=30" in args and "--jobs=5" in args
    assert "--qemu_args=-enable-kvm" in args


def test_failed_build_fails_and_leaves_no_earlier_result(fake):
    # kunit.py run builds the kernel itself: a failed build is kunit.py's
    # error, named; the results of an earlier, passing run do not outlive it
    assert run(fake, "pass").returncode == 0
    assert results(fake)["passed"] == 2
    proc = run(fake, "error")
    assert proc.returncode == 1
    assert "kunit.py exit 1" in proc.stdout and "ERROR: the make command failed" in proc.stdout
    r = results(fake)
    assert (r["passed"], r["kunit_rc"]) == (0, 1)
    for name in ("results.json", "ktap.log", "test.log"):
        assert not (fake / "kunit/default" / name).exists(), name


@pytest.mark.parametrize("mode,says,recorded", [
    # bad_cases: what make mutations matches its "Must fail:" globs against
    ("fail", "failed: yama_fake.second", {"failed": 1, "bad_cases": ["yama_fake.second"]}),
    ("crash", "crashed: yama_fake.second", {"crashed": 1, "bad_cases": ["yama_fake.second"]}),
    ("skip", "no case passed (2 skipped)", {"passed": 0, "skipped": 2}),  # skipped: not passed
    ("error", "kunit.py exit 1", {"kunit_rc": 1}),
    ("splat", "sleeping function called", {"splats": 1}),
])
def test_a_bad_run_fails_and_says_why(fake, mode, says, recorded):
    proc = run(fake, mode)
    assert proc.returncode == 1
    assert says in proc.stdout
    r = results(fake)
    assert {k: r[k] for k in recorded} == recorded


def test_console_of_an_earlier_run_is_not_read(fake):
    # kunit.py writes test.log into the build folder; one left there by an
    # earlier run must not stand for this run's console.
    assert run(fake, "pass").returncode == 0
    assert run(fake, "error").returncode == 1
    assert not (fake / "kunit/default/test.log").exists()


def test_the_series_kunitconfig_runs_yama_suites():
    """security/yama/.kunitconfig, as the series' KUnit patch adds it, is
    the one home of the KUnit config: it turns on KUnit, Yama and its
    tests, and what the suites are compiled under (#ifdef in the tests:
    PROC_SYSCTL, SECURITY_PATH; AUDIT for the refusals' records)."""
    from test_reliability import new_file_of_series
    lines = new_file_of_series("security/yama/.kunitconfig").splitlines()
    for opt in ("CONFIG_KUNIT=y", "CONFIG_SECURITY=y", "CONFIG_SECURITY_YAMA=y",
                "CONFIG_SECURITY_YAMA_KUNIT_TEST=y", "CONFIG_PROC_SYSCTL=y",
                "CONFIG_SECURITY_PATH=y", "CONFIG_AUDIT=y"):
        assert opt in lines, opt
    assert not (WS / "kunit/yama.kunitconfig").exists()   # no second home


@pytest.mark.parametrize("missing,says", [
    ("security/yama/.kunitconfig", "no security/yama/.kunitconfig in"),
    ("tools/testing/kunit/kunit.py", "tools/testing/kunit/kunit.py"),
])
def test_tree_without_kunitconfig_or_kunit_py_fails(fake, missing, says):
    (fake / "linux" / missing).unlink()
    proc = run(fake, "pass")
    assert proc.returncode == 1
    assert "== kunit: fail (0 passed, 1 failed)" in proc.stdout
    assert says in proc.stdout
    assert not (fake / "kunit/kernel/args").exists()     # kunit.py never ran


Build = collections.namedtuple("Build", "made out")


def build(top, **extra):
    """tools/test-kernel of the fake tree (what make selftests runs first):
    whether it ran make (the fake Makefile's mark, removed for the next
    build), and its stdout."""
    env = dict(os.environ, BUILD=str(top), TREE=str(top / "linux"), **extra)
    proc = subprocess.run([str(WS / "tools/test-kernel"), str(top / "linux")],
                          env=env, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    mark = top / "kernel/make-args"
    made = mark.exists()
    mark.unlink(missing_ok=True)
    return Build(made, proc.stdout)


def fragments_of(config):
    """The fragments a .config of the fake merge_config.sh was made of."""
    return [l.split(" ", 2)[2] for l in config.splitlines() if l.startswith("# fragment ")]


def test_the_test_kernel_is_the_minimal_config_plus_the_trees(fake):
    """The test kernel (build/kernel, make selftests' kernel): the minimal
    QEMU config and the cheap runtime checks of the workspace, then the
    tree's tools/testing/selftests/yama/config, which holds everything the
    tests need, as when kernel CI merges a target's config. No KUnit: not
    the tree's .kunitconfig, nothing of a kunit/ folder. Built with W=1's
    flags (not its kernel-doc pass) and the workspace's linker."""
    proc = subprocess.run([str(WS / "tools/test-kernel"), "--fragments"],
                          text=True, capture_output=True, check=True)
    ws = [str(WS / "selftests/config/qemu-x86_64.config"),
          str(WS / "selftests/config/runtime-checks.config")]
    assert proc.stdout.split() == ws
    assert build(fake).made
    config = (fake / "kernel/.config").read_text()
    assert fragments_of(config) == ws + [str(fake / "linux/tools/testing/selftests/yama/config")]
    lines = config.splitlines()
    assert "CONFIG_FAKE_SELFTESTS=y" in lines and "CONFIG_DEBUG_ATOMIC_SLEEP=y" in lines
    assert not [l for l in lines if "KUNIT" in l]
    assert not build(fake).made
    # the extra fragments asked for come before the tree's config, in
    # a folder of their own
    proc = subprocess.run([str(WS / "tools/test-kernel"), str(fake / "linux"), "kasan"],
                          env=dict(os.environ, BUILD=str(fake), TREE=str(fake / "linux")),
                          text=True, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fragments_of((fake / "kernel+kasan/.config").read_text()) == ws + [
        str(WS / "selftests/config/extra/kasan.config"),
        str(fake / "linux/tools/testing/selftests/yama/config")]
    made = (fake / "kernel+kasan/make-args").read_text().split()
    assert "W=1" in made and "cmd_checkdoc=" in made and "LD=ld.lld" in made


def test_the_test_kernel_of_a_tree_without_the_selftests(fake):
    """A partial series (make review of an older revision): the tree's
    config is left out, said so, and the kernel still builds."""
    (fake / "linux/tools/testing/selftests/yama/config").unlink()
    b = build(fake)
    assert b.made and "has no tools/testing/selftests/yama/config, left out" in b.out
    assert len(fragments_of((fake / "kernel/.config").read_text())) == 2


def test_a_failed_build_of_the_test_kernel_fails(fake):
    env = dict(os.environ, BUILD=str(fake), TREE=str(fake / "linux"), FAKE_BUILD="fail")
    proc = subprocess.run([str(WS / "tools/test-kernel"), str(fake / "linux")],
                          env=env, text=True, capture_output=True)
    assert proc.returncode != 0
    assert "fake.c:1: error: broken" in proc.stderr
    assert "the kernel build failed" in proc.stderr
    assert not (fake / "kernel/.build-ok").exists()


def test_kernel_of_an_unchanged_tree_is_not_made_again(fake):
    """tools/test-kernel skips make when nothing of the tree, the command
    or the config changed since the last good build; any newer file of
    the tree, a removed one, or KERNEL_MAKE=always runs make again."""
    assert build(fake).made
    b = build(fake)
    assert not b.made and "bzImage is up to date" in b.out
    assert "(fragments and Kconfig unchanged)" in b.out
    lsm = fake / "linux/security/yama/Kconfig"
    os.utime(lsm)                      # an edit: newer than the last build
    b = build(fake)
    assert b.made and "config: merge_config.sh" in b.out   # a Kconfig file: merged again
    (fake / "linux/security/yama/new.c").write_text("")
    (fake / "linux/security/yama/new.c").unlink()    # the folder changed
    b = build(fake)
    assert b.made and "config: merge_config.sh" not in b.out   # no Kconfig file changed
    assert build(fake, KCFLAGS="-O1").made
    assert not build(fake, KCFLAGS="-O1").made
    assert build(fake).made                          # KCFLAGS gone
    assert not build(fake).made
    assert build(fake, KERNEL_MAKE="always").made
    # New content with an old mtime (cp -p, tar, rsync -a): its ctime tells.
    lsm.write_text(lsm.read_text() + "\n")
    os.utime(lsm, ns=(0, 0))
    assert build(fake).made
    # A file edited while make runs: the next run makes the kernel again.
    os.utime(lsm)
    assert build(fake, FAKE_EDIT=str(lsm)).made
    assert build(fake).made
    assert not build(fake).made


def test_kernel_is_made_again_whatever_the_order_of_its_records(fake):
    """The walk starts at the older of .config and the last good build: an
    edit after the build is seen even when .config is newer than both."""
    assert build(fake).made
    (fake / "linux/security/yama/yama_lsm.c").write_text("int x;\n")
    os.utime(fake / "kernel/.config")     # .config now newer than the edit
    assert build(fake).made


def test_kernel_is_made_again_when_the_walk_fails(fake, tmp_path):
    """A find that fails (an unreadable folder) counts as a change. The
    wrapper is on PATH in every run (PATH is part of the build's key);
    FAKE_FIND_FAIL makes the walk's find fail after listing the tree."""
    wrapper = tmp_path / "bin/find"
    wrapper.parent.mkdir()
    wrapper.write_text('#!/bin/sh\n/usr/bin/find "$@"\nrc=$?\n'
                       'case "$FAKE_FIND_FAIL: $* " in 1:*" -cnewer "*) exit 1 ;; esac\n'
                       'exit $rc\n')
    wrapper.chmod(0o755)
    path = "%s:%s" % (wrapper.parent, os.environ["PATH"])
    assert build(fake, PATH=path).made
    assert not build(fake, PATH=path).made
    assert build(fake, PATH=path, FAKE_FIND_FAIL="1").made
    assert not build(fake, PATH=path).made


def test_kernel_is_made_again_when_a_file_goes_during_the_config(fake):
    """The tree is walked again after merge_config.sh, which takes seconds
    in a real tree: a file removed meanwhile is a change."""
    extra = fake / "linux/security/yama/extra.c"
    extra.write_text("")
    assert build(fake).made
    # The config is made again (as when a fragment of the workspace
    # changed), and the same .config comes out: only the walk can tell.
    (fake / "kernel/.fragments").write_text("another stamp\n")
    b = build(fake, FAKE_MERGE_RM=str(extra))
    assert b.made and "config: merge_config.sh" in b.out
