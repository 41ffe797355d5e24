"""The QEMU test kernel, in the shape of WireGuard's selftest harness.

A config merged from fragments by the kernel's merge_config.sh, a bzImage
built out of tree, an initramfs of busybox-static plus what the guest runs,
and one boot under a hard timeout: the console on the first serial port,
the results on a second one of their own, so the two never mix.
"""
import fcntl
import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .ws import KBUILD_FLAGS, StageError, kbuild_env, run

QBOOT = Path("/usr/share/qemu/qboot.rom")
# Sub-makes must not inherit the workspace make's flags and jobserver.
NO_MAKE = {"MAKEFLAGS": "", "MFLAGS": "", "MAKELEVEL": "", "MAKEOVERRIDES": ""}


def make_env(ws):
    return {**NO_MAKE, **kbuild_env(ws)}


def fragments(ws, src, extra=(), after=()):
    """The test kernel's fragments in merge order: the minimal QEMU config,
    the cheap runtime checks, EXTRA (names in selftests/config/extra/, or
    paths), the target's own config, as kernel CI merges it, and AFTER
    (the same kind of names: what the workspace's boots change of it)."""
    cfg = ws.root / "selftests/config"
    name = lambda e: Path(e) if "/" in str(e) else cfg / "extra" / (e + ".config")
    own = Path(src) / "tools/testing/selftests/yama/config"
    return [cfg / "qemu-x86_64.config", cfg / "runtime-checks.config", *map(name, extra),
            *[own][:own.exists()], *map(name, after)]


def kernel_dir(ws, extra=()):
    """build/kernel-<default|extra+extra>: one level under build/, as the
    author's tree is one under the workspace (ccache's relative paths)."""
    return ws.dir("kernel-" + ("+".join(map(str, extra)) or "default"))


def merge_config(ws, src, kdir, frags, strict=True):
    """KDIR/.config: allnoconfig plus FRAGS by merge_config.sh -n (-s:
    STRICT, no fragment redefines an option), failing when any requested
    option is not set."""
    kdir = Path(kdir)
    kdir.mkdir(parents=True, exist_ok=True)
    for f in frags:
        if not Path(f).is_file():
            raise StageError("no config fragment %s" % f)
    # merge_config.sh makes temporary files in its folder and runs a plain
    # make there: in KDIR, with kbuild's O= Makefile, not in the tree.
    if not (kdir / "Makefile").exists():
        (kdir / "Makefile").write_text("include %s/Makefile\n" % src)
    log = kdir / "config.log"
    log.unlink(missing_ok=True)
    run([Path(src) / "scripts/kconfig/merge_config.sh", "-n", *["-s"][:strict], "-O", kdir,
         *frags], cwd=kdir, log=log, label="merge_config.sh",
        env={**NO_MAKE, "MAKEFLAGS": " ".join(KBUILD_FLAGS), "ARCH": "x86_64"})
    unmet = [l for l in log.read_text().splitlines()
             if l.startswith("Value requested for")]
    if unmet:
        raise StageError("%d requested option(s) not set (%s), see %s"
                         % (len(unmet), unmet[0], log))


def kmake(ws, src, out, *targets, log=None, label=None, timeout=None):
    """make in tree SRC with objects in OUT and the workspace's flags."""
    return run(["make", "-C", src, "O=%s" % out, "ARCH=x86_64",
                "CC=ccache gcc", *KBUILD_FLAGS, "-j%d" % os.cpu_count(),
                *targets], env=make_env(ws), log=log, timeout=timeout,
               label=label or "make " + " ".join(targets))


def build_kernel(ws, src, kdir, extra=(), after=()):
    """The config from the fragments (+EXTRA, +AFTER, which may redefine
    what the target's config set) and the bzImage in KDIR."""
    merge_config(ws, src, kdir, fragments(ws, src, extra, after), not after)
    log = Path(kdir) / "build.log"
    log.write_text("")
    try:
        kmake(ws, src, kdir, "bzImage", log=log, label="kernel build")
    except StageError:
        print("".join("  | " + l for l in log.read_text().splitlines(True)[-20:]))
        raise
    return Path(kdir) / "arch/x86/boot/bzImage"


@contextmanager
def locked(kdir):
    """Hold KDIR's lock: stages started side by side take turns."""
    Path(kdir).parent.mkdir(parents=True, exist_ok=True)
    with open("%s.lock" % kdir, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def initramfs(kdir, dest, init, files=None, trees=None):
    """DEST, a cpio for the guest: busybox-static's applets in /bin, INIT as
    /init, FILES {guest path: host file}, TREES {guest dir: host dir}; packed
    by the kernel's own usr/gen_init_cpio (no root needed)."""
    busybox = shutil.which("busybox")
    if not busybox or "interpreter" in run(["readelf", "-l", busybox],
                                           capture=True).stdout:
        raise StageError("no static busybox (Debian: busybox-static)")
    lines = ["dir /dev 0755 0 0", "nod /dev/console 0600 0 0 c 5 1"]
    lines += ["dir %s 0755 0 0" % d for d in
              ("/proc", "/sys", "/tmp", "/bin", "/usr", "/usr/bin")]
    lines += ["file /init %s 0755 0 0" % init,
              "file /bin/busybox %s 0755 0 0" % busybox]
    lines += ["slink /bin/%s busybox 0777 0 0" % a for a in
              run([busybox, "--list"], capture=True).stdout.split()
              if a != "busybox"]
    files = dict(files or {})
    for guest, host in (trees or {}).items():
        lines.append("dir %s 0755 0 0" % guest)
        for top, dirs, names in os.walk(host):
            rel = guest + top[len(str(host)):]
            lines += ["dir %s/%s 0755 0 0" % (rel, d) for d in sorted(dirs)]
            files.update({"%s/%s" % (rel, n): Path(top, n) for n in names})
    lines += ["file %s %s %o 0 0" % (g, h, Path(h).stat().st_mode & 0o777)
              for g, h in files.items()]
    listing = Path(dest).with_suffix(".list")
    listing.write_text("\n".join(lines) + "\n")
    with open(dest, "wb") as out:
        subprocess.run([Path(kdir) / "usr/gen_init_cpio", listing],
                       stdout=out, check=True)
    return Path(dest)


LIVE = set()    # the boots running, for stop_all


def stop(proc):
    """Kill PROC's whole process group (QEMU is alone in its session)."""
    LIVE.discard(proc)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def stop_all():
    for proc in list(LIVE):
        stop(proc)


@dataclass
class Boot:
    console: str     # the kernel's console (ttyS0)
    ktap: str        # what the guest wrote to its result channel (ttyS1)
    seconds: float
    problem: str     # "" when QEMU ended by itself with exit 0


def boot(kernel, initrd, cmdline, outdir, *, timeout=900, smp=1, label="qemu"):
    """One boot of KERNEL with INITRD; logs in OUTDIR; killed after TIMEOUT s."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    con, res, log = outdir / "console.log", outdir / "ktap.log", outdir / "qemu.log"
    for f in (con, res, log):
        f.unlink(missing_ok=True)
    cmdline = "console=ttyS0 panic=-1 rdinit=/init " + cmdline
    (outdir / "cmdline").write_text(cmdline + "\n")
    cmd = ["qemu-system-x86_64", "-nodefaults", "-no-reboot", "-machine", "pc",
           "-accel", "kvm" if os.environ.get("KVM") == "1" else "tcg",
           *(["-bios", QBOOT] if QBOOT.exists() else []),
           "-m", "512M", "-smp", smp, "-display", "none", "-monitor", "none",
           "-kernel", kernel, "-initrd", initrd, "-append", cmdline.strip(),
           "-serial", "file:%s" % con, "-serial", "file:%s" % res]
    t0, problem = time.monotonic(), ""
    with open(log, "w") as f:
        proc = subprocess.Popen(list(map(str, cmd)), stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    LIVE.add(proc)
    try:
        while proc.poll() is None and time.monotonic() - t0 < timeout:
            try:
                proc.wait(min(30, max(1, timeout - (time.monotonic() - t0))))
            except subprocess.TimeoutExpired:
                done = res.read_text(errors="replace").count("ok ") if res.exists() else 0
                print("  %s: running for %ds, %d results so far"
                      % (label, time.monotonic() - t0, done), flush=True)
        if proc.poll() is None:
            problem = "QEMU killed after the %ds timeout" % timeout
        elif proc.returncode:
            problem = "QEMU exited with %d, see %s" % (proc.returncode, log)
    finally:
        stop(proc)
    read = lambda p: p.read_text(errors="replace") if p.exists() else ""
    return Boot(read(con), read(res), time.monotonic() - t0, problem)
