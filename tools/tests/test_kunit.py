"""Tests of tools/kunit (make kunit) and tools/test-kernel on a fake tree:
its kunit.py (FAKE) writes a console log and a --json file the way kunit.py
does, with results chosen by FAKE_KUNIT. No kernel is built or booted."""
import collections
import json
import os
import pathlib
import subprocess
import textwrap

import pytest

WS = pathlib.Path(os.environ["WS"])  # conftest.py

FAKE = textwrap.dedent(r'''
    import json, os, sys
    args = sys.argv[1:]
    opt = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    build, js = opt["build_dir"], opt["json"]
    mode = os.environ.get("FAKE_KUNIT", "pass")
    with open(os.path.join(build, "args"), "w") as f:
        f.write("\n".join(args))
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
''')


MERGE = textwrap.dedent(r'''
    #!/bin/sh
    while [ $# -gt 0 ]; do
        case $1 in -O) out=$2; shift 2 ;; -*) shift ;; *) break ;; esac
    done
    cat "$@" >"$out/.config"
    # FAKE_MERGE_RM: a file removed while the config is made.
    [ -z "$FAKE_MERGE_RM" ] || rm -f "$FAKE_MERGE_RM"
''').lstrip()


# What tools/test-kernel builds with: make bzImage, out of tree. The fake
# records its command line; FAKE_BUILD=fail makes it fail, FAKE_EDIT touches
# a file while it runs.
MAKEFILE = (
    "bzImage:\n"
    "\t@test \"$$FAKE_BUILD\" != fail || { echo 'fake.c:1: error: broken'; exit 1; }\n"
    "\t@test -z \"$$FAKE_EDIT\" || touch \"$$FAKE_EDIT\"\n"
    "\t@mkdir -p $(O)/arch/x86/boot && echo '$(MAKEFLAGS)' >$(O)/make-args"
    " && touch $(O)/arch/x86/boot/bzImage\n")


@pytest.fixture
def fake(tmp_path):
    """A tree with what tools/kunit and tools/test-kernel need of it: kunit.py
    (FAKE), Yama's KUnit option, a git tree, the selftests' config,
    merge_config.sh (here: the fragments, joined) and a Makefile (MAKEFILE)."""
    tree = tmp_path / "linux"
    for path, text in (("tools/testing/kunit/kunit.py", FAKE),
                       ("security/yama/Kconfig", "config SECURITY_YAMA_KUNIT_TEST\n\ttristate\n"),
                       ("tools/testing/selftests/yama/config", "CONFIG_FAKE_SELFTESTS=y\n"),
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
    proc = run(fake, "pass")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "== kunit: pass (2 passed, 0 failed)" in proc.stdout
    assert (results(fake)["passed"], results(fake)["bad_cases"]) == (2, [])
    assert "yama_fake" in proc.stdout
    assert (fake / "kunit/default/ktap.log").read_text().startswith("KTAP")
    args = (fake / "kernel/args").read_text().split("\n")
    # tools/test-kernel builds the test kernel (build/kernel, shared with
    # make selftests) with W=1's flags, not its kernel-doc pass; kunit.py
    # exec boots it with its whole config as the kunitconfig, by absolute
    # path (kunit.py changes to the tree first); only Yama's suites run.
    made = (fake / "kernel/make-args").read_text().split()
    assert "W=1" in made and "cmd_checkdoc=" in made
    assert args[0] == "exec"
    kconf = fake / "kunit/default/kunitconfig"
    assert [a for a in args if a.startswith("--kunitconfig")] == [
        "--kunitconfig=%s" % kconf]
    assert kconf.read_text() == (fake / "kernel/.config").read_text()
    lines = kconf.read_text().split("\n")
    assert "CONFIG_SECURITY_YAMA_KUNIT_TEST=y" in lines   # kunit/yama.kunitconfig
    assert "CONFIG_FAKE_SELFTESTS=y" in lines            # the tree's selftests
    assert args[-1] == "yama*"
    assert "--build_dir=%s" % (fake / "kernel") in args
    assert "-enable-kvm" not in " ".join(args)


def test_failed_build_fails_before_any_boot(fake):
    # the results of an earlier, passing run must not outlive a failed build
    assert run(fake, "pass").returncode == 0
    assert (fake / "results/kunit.json").exists()
    (fake / "kernel/args").unlink()
    os.utime(fake / "linux/security/yama/Kconfig")  # the edit that breaks it
    proc = run(fake, "pass", FAKE_BUILD="fail")
    assert proc.returncode == 1
    assert "the test kernel (tools/test-kernel) was not built" in proc.stdout
    assert "fake.c:1: error: broken" in proc.stderr
    assert not (fake / "kernel/args").exists()      # kunit.py never ran
    assert not (fake / "results/kunit.json").exists()


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


def test_base_config_is_yama():
    lines = (WS / "kunit/yama.kunitconfig").read_text().split("\n")
    for opt in ("CONFIG_KUNIT=y", "CONFIG_SECURITY_YAMA=y", "CONFIG_SECURITY_YAMA_SYMLINKS=y",
                "CONFIG_SECURITY_YAMA_HARDLINKS=y", "CONFIG_SECURITY_YAMA_KUNIT_TEST=y",
                "CONFIG_AUDIT=y"):
        assert opt in lines


def test_tree_without_kunit_tests_fails(fake):
    (fake / "linux/security/yama/Kconfig").write_text("config SECURITY_YAMA\n")
    proc = run(fake, "pass")
    assert proc.returncode == 1
    assert "KUnit tests are not in" in proc.stdout
    assert not (fake / "kernel/args").exists()


Build = collections.namedtuple("Build", "made out")


def build(top, **extra):
    """tools/test-kernel of the fake tree (what make kunit and make
    selftests run first): whether it ran make (the fake Makefile's mark,
    removed for the next build), and its stdout."""
    env = dict(os.environ, BUILD=str(top), TREE=str(top / "linux"), **extra)
    proc = subprocess.run([str(WS / "tools/test-kernel"), str(top / "linux")],
                          env=env, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    mark = top / "kernel/make-args"
    made = mark.exists()
    mark.unlink(missing_ok=True)
    return Build(made, proc.stdout)


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
