"""The test kernel's mechanics with fakes: fragments, merge_config's check,
kmake's flags, the initramfs listing, a boot's two channels, splats."""
import os

import pytest

from yws import qemu, splats
from yws.ws import KBUILD_FLAGS, StageError, Workspace


def script(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    for f in ("qemu-x86_64.config", "runtime-checks.config", "extra/kasan.config"):
        (root / "selftests/config" / f).parent.mkdir(parents=True, exist_ok=True)
        (root / "selftests/config" / f).write_text("CONFIG_X=y\n")
    return Workspace(root=root, build=tmp_path / "build")


def test_fragments_merge_the_targets_own_config_last(ws, tmp_path):
    src = tmp_path / "linux"
    own = src / "tools/testing/selftests/yama/config"
    own.parent.mkdir(parents=True)
    own.write_text("CONFIG_SECURITY_YAMA=y\n")
    frags = qemu.fragments(ws, src, ["kasan", tmp_path / "other.config"])
    assert [f.name for f in frags] == ["qemu-x86_64.config", "runtime-checks.config",
                                       "kasan.config", "other.config", "config"]
    assert frags[-1] == own
    assert qemu.fragments(ws, tmp_path / "none")[-1].name == "runtime-checks.config"
    assert qemu.fragments(ws, src, after=["kasan"])[-2:] == [own, frags[2]]


def test_an_option_merge_config_could_not_set_fails(ws, tmp_path):
    src = tmp_path / "linux"
    script(src / "scripts/kconfig/merge_config.sh",
           'echo "Value requested for CONFIG_YAMA not in final .config"\n')
    frags = qemu.fragments(ws, src)
    with pytest.raises(StageError, match="1 requested option"):
        qemu.merge_config(ws, src, tmp_path / "build/k/default", frags)
    script(src / "scripts/kconfig/merge_config.sh", 'echo "$MAKEFLAGS $ARCH $*"\n')
    qemu.merge_config(ws, src, tmp_path / "build/k/default", frags)
    log = (tmp_path / "build/k/default/config.log").read_text()
    assert "LD=ld.lld x86_64 -n -s -O" in log
    with pytest.raises(StageError, match="no config fragment"):
        qemu.merge_config(ws, src, tmp_path / "build/k/default", [tmp_path / "gone"])


def test_kmake_passes_the_workspace_flags_and_ccache(ws, monkeypatch):
    seen = {}
    monkeypatch.setattr(qemu, "run", lambda cmd, **kw: seen.update(cmd=cmd, **kw))
    qemu.kmake(ws, "/src", "/out", "bzImage")
    assert seen["cmd"][:6] == ["make", "-C", "/src", "O=/out", "ARCH=x86_64", "CC=ccache gcc"]
    assert seen["cmd"][6:9] == KBUILD_FLAGS and seen["cmd"][-1] == "bzImage"
    assert seen["env"]["MAKEFLAGS"] == "" and seen["env"]["CCACHE_NOHASHDIR"] == "1"


def test_initramfs_lists_busybox_init_files_and_trees(tmp_path):
    if not os.path.exists("/usr/bin/busybox") and not os.path.exists("/bin/busybox"):
        pytest.skip("no busybox")
    script(tmp_path / "k/usr/gen_init_cpio", 'cat "$1"\n')
    inst = tmp_path / "inst"
    script(inst / "yama/ptrace_test", "")
    (inst / "kselftest-list.txt").write_text("yama:ptrace_test\n")
    cpio = qemu.initramfs(tmp_path / "k", tmp_path / "i.cpio", tmp_path / "init",
                          files={"/kconfig": inst / "kselftest-list.txt"},
                          trees={"/kselftest": inst})
    lines = cpio.read_text().splitlines()
    assert "file /init %s 0755 0 0" % (tmp_path / "init") in lines
    assert "slink /bin/sh busybox 0777 0 0" in lines
    assert "dir /kselftest/yama 0755 0 0" in lines
    assert "file /kselftest/yama/ptrace_test %s 755 0 0" % (inst / "yama/ptrace_test") in lines
    assert "file /kconfig %s 644 0 0" % (inst / "kselftest-list.txt") in lines


FAKE_QEMU = r'''
n=0; for a; do case "$a" in file:*) n=$((n + 1)); eval "f$n=\${a#file:}";; esac; done
echo "Linux version 6.12" > "$f1"
echo "1..1" > "$f2"
sleep "${FAKE_SLEEP:-0}"
exit "${FAKE_RC:-0}"
'''


def test_boot_returns_console_and_ktap_apart_and_is_killed_on_timeout(tmp_path, monkeypatch):
    script(tmp_path / "bin/qemu-system-x86_64", FAKE_QEMU)
    monkeypatch.setenv("PATH", "%s/bin:%s" % (tmp_path, os.environ["PATH"]))
    b = qemu.boot("bzImage", "initrd", "lsm=landlock", tmp_path / "b")
    assert b.console.startswith("Linux version") and b.ktap == "1..1\n" and b.problem == ""
    assert "lsm=landlock" in (tmp_path / "b/cmdline").read_text()
    monkeypatch.setenv("FAKE_RC", "3")
    assert "exited with 3" in qemu.boot("k", "i", "", tmp_path / "b").problem
    monkeypatch.setenv("FAKE_SLEEP", "60")
    b = qemu.boot("k", "i", "", tmp_path / "b", timeout=1)
    assert "killed after the 1s timeout" in b.problem and b.seconds < 30
    assert not qemu.LIVE


def test_splats_name_their_kind_and_a_clean_console_has_none():
    console = "\n".join(["Yama: becoming mindful.",
                         "BUG: KASAN: slab-use-after-free in yama_ptracer_del",
                         "WARNING: CPU: 0 PID: 1 at security/yama/yama_lsm.c:42",
                         "BUG: sleeping function called from invalid context",
                         "Kernel panic - not syncing: Fatal exception",
                         "WARNING: suspicious RCU usage"])
    kinds = [s.split(":")[0] for s in splats.scan(console)]
    assert kinds == ["KASAN", "WARNING", "atomic sleep", "panic", "RCU"]
    assert splats.scan("Yama: becoming mindful.\nok 1 selftests: yama: x") == []
    assert splats.failures("BUG: KFENCE: out-of-bounds", "boot")[0]["name"] == "boot"
