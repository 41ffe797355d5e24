#!/usr/bin/env python3
"""Series gates: every patch of series/, applied in order on the base, is
checked on its own (checkpatch, W=1 build, sparse on the touched files,
kernel-doc on the touched C files); the tip is also built in a small config
matrix and its rst documentation is parsed.

Cost: the tip is built first and the earlier states after it, back to
patch 1, so a cold run builds the kernel whole once (o-main). With SYSCTL=n
(o-sysctl), which changes what nearly every object reads, only the objects
of the C files the series touches are compiled (series_objects); with
SERIES_CHECK_SYSCTL_N=whole (make check-debug) the tip is built and linked
whole in that config. The base is never built whole, only the objects that
warn in some build of the series (base_warnings), to tell a new warning
from one the base has.

Called by tools/series-check (which prints the stage banner and verdict).

Layout under $GATES_DIR (default $BUILD/gates):
  linux/        a `git clone --shared` of $TREE: the only checkout it builds
  o-main/       the out-of-tree build directory (make O=), kept between runs;
                its config at the tip is the test kernel's (tools/test-kernel:
                the same fragments, W=1, ARCH=x86_64), and linux/ is to o-main/
                what build/linux is to build/kernel (../linux), so ccache
                (CCACHE_BASEDIR) gives the test kernel what the tip compiled
  cfg/          allnoconfig results at the base, one per config of the matrix;
                olddef-KEY.config: olddefconfig's result by its inputs
                (configure())
  cache/        one JSON per gate run, named by a hash of everything the gate
                reads (patch bytes, tree ids, config fragment, tool versions):
                an unchanged input is never checked twice
Environment: SERIES_DIR (default $WS/series), GATES_DIR, SERIES_CHECK_OUT
(results prefix; default $RESULTS/series-check, or under GATES_DIR/scratch
when SERIES_DIR is overridden), JOBS (make -j, default 2),
SERIES_CHECK_SYSCTL_N (objects, the default, or whole).
"""

import collections
import fcntl
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import series  # noqa: E402  (tools/series.py)

WS, BUILD, _, TREE, RESULTS, SERIES_DIR = series.workspace()
G = os.path.abspath(os.environ.get("GATES_DIR") or os.path.join(BUILD, "gates"))
SRC = os.path.join(G, "linux")
OLD_SRC = os.path.join(G, "src")    # the checkout's name until 2026-12
ODIR_MAIN = os.path.join(G, "o-main")
ODIR = ODIR_MAIN
# Build directories: one per config whose switch rebuilds most of the
# kernel (SYSCTL=n touches almost every object through sysctl.h), so warm
# runs never flip a build directory back and forth between them. yama=n
# shares o-main: the base config already has what Yama selects
# (SECURITY_PATH, see selected_symbols()), so switching Yama off and on
# again recompiles only the objects that test a Yama symbol.
ODIRS = {"sysctl=n": os.path.join(G, "o-sysctl"),
         # KUNIT=y changes what every object reads (autoconf.h) too
         "kunit-test=y": os.path.join(G, "o-kunit"),
         # the base built whole (only when a warning has no object): a
         # folder of its own, so make prints every object's lines
         "base-whole": os.path.join(G, "o-base")}


def use_odir(cfgname):
    global ODIR
    ODIR = ODIRS.get(cfgname, ODIR_MAIN)
JOBS = os.environ.get("JOBS", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
CCWRAP = os.path.join(HERE, "cc-wrap")
SPARSEWRAP = os.path.join(HERE, "sparse-wrap")
CC = "%s ccache gcc" % CCWRAP
DICT = "/usr/lib/python3/dist-packages/codespell_lib/data/dictionary.txt"
if os.environ.get("SERIES_CHECK_OUT"):
    OUTP = os.environ["SERIES_CHECK_OUT"]
elif SERIES_DIR != os.path.abspath(os.path.join(WS, "series")):
    OUTP = os.path.join(G, "scratch", os.path.basename(SERIES_DIR), "series-check")
else:
    OUTP = os.path.join(RESULTS, "series-check")

# SYSCTL=n rebuilds the whole kernel (sysctl.h is read nearly everywhere):
# make check compiles only the series' own objects in that config, make
# check-debug (SERIES_CHECK_SYSCTL_N=whole) builds and links it whole.
SYSCTL_N = os.environ.get("SERIES_CHECK_SYSCTL_N") or "objects"
if SYSCTL_N not in ("objects", "whole"):
    sys.exit("error: SERIES_CHECK_SYSCTL_N=%s: objects or whole" % SYSCTL_N)
SYSCTL_N_WHOLE = SYSCTL_N == "whole"
PATCH_GATES = ["apply", "checkpatch", "build", "sparse", "kernel-doc"]
MATRIX_GATES = ["yama=n", "sysctl=n", "kunit-test=y"]      # the tip built in MATRIX
TIP_GATES = MATRIX_GATES + ["rst"]
# The main config is the test kernel's (fragment()); this part comes first
# and says what the gates need of it (the fragments after it agree, else
# tools/test-kernel's strict merge would fail): Yama and sysctl. KUnit is
# off, as in the selftest kernel, whose config this is at the tip (so that
# it gets the tip's objects from ccache); the KUnit test code is compiled
# in the kunit-test=y entry of the matrix.
# SECURITY_PATH: the hardlink restriction needs it; set from the base on,
# so the config of every state equals the tip's except for Yama's own
# symbols and no patch flips a symbol that security.h (nearly every
# object) tests.
# fragment() also adds whatever else a Kconfig line of the series selects.
BASE_FRAGMENT = """CONFIG_SECURITY=y
CONFIG_SECURITY_PATH=y
CONFIG_SECURITY_YAMA=y
CONFIG_SYSCTL=y
CONFIG_PROC_SYSCTL=y
"""
# Warnings the base itself has in a matrix config, in files the series
# does not touch, that the per-object scope cannot tell from the series'
# own: the series touches include/linux/security.h, which nearly every
# object reads, so nearly every object is "in scope". Each entry: matrix
# config -> (file, regex of the message); checked against files the series
# touches, which are never excused.
BASE_MATRIX_WARNINGS = {
    # max_rt_runtime is only used by the sched_rt sysctl handler.
    "sysctl=n": [("kernel/sched/rt.c", r"'max_rt_runtime' defined but not used")],
}


def excused(cfgname, warning, touched):
    f = warning.split(":", 1)[0]
    if f in touched:
        return False
    msg = warning.replace("\u2018", "'").replace("\u2019", "'")
    return any(f == ef and re.search(rx, msg)
               for ef, rx in BASE_MATRIX_WARNINGS.get(cfgname, []))


MATRIX = {
    "main": "",
    "yama=n": "# CONFIG_SECURITY_YAMA is not set\n",
    # PROC_SYSCTL (which selects SYSCTL) has a prompt only with EXPERT.
    "sysctl=n": "CONFIG_EXPERT=y\n# CONFIG_PROC_SYSCTL is not set\n"
                "# CONFIG_SYSCTL is not set\n",
    "kunit-test=y": "CONFIG_KUNIT=y\nCONFIG_SECURITY_YAMA_KUNIT_TEST=y\n",
}
# What each matrix config must end up with in .config (else it is red).
MATRIX_EXPECT = {
    "yama=n": ("CONFIG_SECURITY_YAMA", None),
    "sysctl=n": ("CONFIG_SYSCTL", None),
    "kunit-test=y": ("CONFIG_SECURITY_YAMA_KUNIT_TEST", "y"),
}
T0 = time.time()


def progress(msg):
    print("  [%4ds] %s" % (time.time() - T0, msg), flush=True)


def objects_since(odir, t0=0):
    """Objects (.o) under odir written since t0 (all with t0=0)."""
    return sum(1 for root, _dirs, files in os.walk(odir) for fn in files
               if fn.endswith(".o") and (not t0 or os.path.getmtime(os.path.join(root, fn)) >= t0))


def run(cmd, cwd=None, env=None, check=False, inp=None):
    # ARCH: as tools/test-kernel and kunit.py --arch=x86_64 build.
    e = dict(os.environ, LC_ALL="C", ARCH="x86_64")
    e.update(env or {})
    # A progress line every 30 s while a long command (a build) runs.
    done = threading.Event()
    t0 = time.time()

    odir = next((a[2:] for a in cmd if a.startswith("O=")), None)

    def heartbeat():
        while not done.wait(30):
            built = ""
            if odir and "vmlinux" in cmd:
                built = ", %d objects built" % objects_since(odir, t0)
                try:
                    built += " (the last full build has %s)" % read(
                        os.path.join(odir, ".objects")).strip()
                except OSError:
                    pass
            progress("  ... %s still running (%ds%s)" % (
                " ".join(a for a in cmd if not a.startswith("O="))[:60],
                time.time() - t0, built))
    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=e, input=inp,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, errors="replace")
    finally:
        done.set()
        beat.join()
    if check and p.returncode:
        sys.exit("error: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode,
                                                 p.stdout[-3000:]))
    return p.returncode, p.stdout


def git(*args, **kw):
    return run(["git", "-C", SRC, *args], **kw)


def gitout(*args):
    return git(*args, check=True)[1].strip()


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:32]


def file_sha(path):
    return sha(read(path, mode="rb"))


def read(path, **kw):
    with open(path, **kw) as f:
        return f.read()


def write(path, text, atomic=False):
    """Write text to path; atomic: through path.tmp, so that a reader sees
    the old file or the whole new one."""
    with open(path + ".tmp" if atomic else path, "w") as f:
        f.write(text)
    if atomic:
        os.replace(path + ".tmp", path)


def tool_version(*cmd):
    """The first line of a tool's --version (the toolchain is part of every
    cache key); a missing tool stops the gates with the package to install."""
    try:
        return subprocess.run(list(cmd) + ["--version"], capture_output=True,
                              text=True).stdout.split("\n", 1)[0]
    except OSError:
        sys.exit("error: %s not found (make deps installs it)" % cmd[0])


# Everything that changes what a gate records: GATES_VERSION (bump it when
# a change of this script changes the cached results), cc-wrap, the W=
# options (KBUILD_WARN), the linker (KBUILD_LINK), and the versions of the
# tools the builds and Kconfig run: gcc, binutils (as; GNU ld links
# o-sysctl), ld.lld, pahole, sparse.
GATES_VERSION = "3"
TOOLS = sha(GATES_VERSION, file_sha(CCWRAP), os.environ.get("KBUILD_WARN", ""),
            os.environ.get("KBUILD_LINK", ""),
            *(tool_version(t) for t in ("gcc", "as", "ld.bfd", "ld.lld", "pahole", "sparse")))


CACHE = os.path.join(G, "cache")
os.makedirs(CACHE, exist_ok=True)


def cached(key):
    """The result a gate run kept under key, or None."""
    try:
        return json.loads(read(os.path.join(CACHE, key + ".json")))
    except (OSError, ValueError):
        return None


def keep(key, res):
    """Keep a gate run's result under key; (res, False): not from the cache."""
    write(os.path.join(CACHE, key + ".json"), json.dumps(res, indent=1), atomic=True)
    return res, False


# ---------------------------------------------------------------- warnings
ANSI = re.compile(r"\x1b\[[0-9;]*[mK]")
DIAG = re.compile(r"(^|[\s:])(warning|error|WARNING|ERROR):")
KDOC_LINE = re.compile(r"^[^\s:]+:\d+: (warning|error):")
LINENO = re.compile(r"^(\S+?):\d+(:\d+)?:")


def norm(line):
    """A warning line without paths of the build and without line numbers,
    so the same warning matches across patches that move code."""
    line = ANSI.sub("", line).strip()
    for p in (SRC + "/", "../linux/"):
        line = line.replace(p, "")
    line = re.sub(re.escape(G) + r"/o-[^/ ]+/", "", line)
    line = LINENO.sub(r"\1:", line)
    return re.sub(r"\s+", " ", line)


def diag_lines(text):
    """The diagnostic lines of text, without colours and without gcc's
    quoted source lines ("  12 | code")."""
    lines = (ANSI.sub("", l) for l in text.splitlines())
    return [l.rstrip() for l in lines if DIAG.search(l) and not l.lstrip().startswith("|")]


def warn_file(path):
    """The warnings cc-wrap kept of one object (OBJ.warn), normalised."""
    return {norm(l) for l in diag_lines(read(path, errors="replace"))}


def make_diags(output):
    """make's own diagnostic lines (objtool, ld, modpost). The kernel-doc
    lines that W=1 prints (file:line: warning:, no column) are left to the
    kernel-doc gate, which compares each file with its previous version."""
    return [l for l in diag_lines(output) if not KDOC_LINE.match(ANSI.sub("", l))]


def first_errors(text, n=8):
    lines = [l for l in text.splitlines()
             if re.search(r"error|Error|undefined reference|\*\*\*", l)]
    return (lines or text.splitlines()[-n:])[:n]


# ---------------------------------------------------------------- the tree
def ensure_src():
    base = run(["git", "-C", TREE, "rev-parse", "--verify", "-q",
                "refs/tags/base^{commit}"])[1].strip()
    if not base:
        sys.exit("error: %s has no tag 'base'; run make tree" % TREE)
    if os.path.isdir(OLD_SRC):
        progress("removing the checkout's old folder %s" % OLD_SRC)
        run(["rm", "-rf", OLD_SRC] + [os.path.join(G, d) for d in os.listdir(G)
                                       if d.startswith("o-")])
    if not os.path.isdir(os.path.join(SRC, ".git")):
        progress("cloning %s -> %s (shared objects)" % (TREE, SRC))
        os.makedirs(G, exist_ok=True)
        run(["git", "clone", "-q", "--shared", "--no-checkout", TREE, SRC],
            check=True)
        git("checkout", "-q", "--detach", base, check=True)
    if git("cat-file", "-e", base + "^{commit}")[0]:
        git("fetch", "-q", TREE, "refs/tags/base:refs/tags/base", check=True)
    git("config", "gc.auto", "0")
    if os.path.exists(os.path.join(SRC, ".config")):
        sys.exit("error: %s was built in place; remove it" % SRC)
    return base


def apply_series(base, names):
    """Apply the patches on the base in a private index (the checkout is not
    touched, so the build keeps its timestamps). Returns the states: a list
    of dicts, the base first, then one per patch that applied, and the name
    and error of the first patch that did not apply."""
    env = {"GIT_INDEX_FILE": os.path.join(G, "apply.index")}
    for who in ("AUTHOR", "COMMITTER"):
        env.update({"GIT_%s_NAME" % who: "gates", "GIT_%s_EMAIL" % who: "gates@localhost",
                    "GIT_%s_DATE" % who: "2010-06-21T00:00:00+00:00"})
    git("read-tree", base, env=env, check=True)
    states = [{"name": "base", "commit": base,
               "tree": gitout("rev-parse", base + "^{tree}")}]
    for n, name in enumerate(names, 1):
        path = os.path.join(SERIES_DIR, name)
        if not os.path.exists(path):
            return states, name, ["series/series names %s, which does not exist" % name]
        rc, out = git("apply", "--cached", path, env=env)
        if rc:
            return states, name, out.strip().splitlines()[:8]
        tree = git("write-tree", env=env, check=True)[1].strip()
        with open(path, errors="replace") as f:
            subject = next((l[8:].strip() for l in f if l.startswith("Subject:")), name)
        commit = git("commit-tree", tree, "-p", states[-1]["commit"], "-m",
                     subject, env=env, check=True)[1].strip()
        git("update-ref", "refs/gates/%d" % n, commit)
        states.append({"name": name, "n": n, "path": path, "subject": subject,
                       "commit": commit, "tree": tree,
                       "patch_sha": file_sha(path)})
    return states, None, None


CHECKED_OUT = [None]


def checkout(state):
    if CHECKED_OUT[0] != state["commit"]:
        old = gitout("rev-parse", "HEAD")
        git("checkout", "-q", "-f", "--detach", state["commit"], check=True)
        CHECKED_OUT[0] = state["commit"]
        forget_deleted_headers(old, state["commit"])


def forget_deleted_headers(old, new):
    """make does not rebuild an object when a header it used disappears
    (kbuild's dependency lists tolerate missing files), so a patch that
    includes a header only a later patch adds could pass on an object
    built earlier: remove the objects that used a header the checkout
    deleted, in every build directory."""
    out = git("diff", "--name-only", "--diff-filter=D", old, new)[1]
    for f in [f for f in out.split() if f.endswith(".h")]:
        for od in sorted({ODIR_MAIN, *ODIRS.values()}):
            if not os.path.isdir(od):
                continue
            hits = run(["grep", "-rlF", "--include=*.o.cmd", os.path.join(SRC, f), od])[1]
            for cmd in hits.split():
                d, name = os.path.split(cmd)
                obj = os.path.join(d, name[1:-4])          # .foo.o.cmd -> foo.o
                if os.path.exists(obj):
                    os.unlink(obj)


def changed_files(a, b):
    out = gitout("diff", "--name-only", "--no-renames", a["tree"], b["tree"])
    return [l for l in out.splitlines() if l]


# Where files are that the kernel build may not read: documentation, the
# selftests, MAINTAINERS (tools/ elsewhere has objtool and its headers).
NOT_KERNEL = ("Documentation/", "tools/testing/", "MAINTAINERS")
# Where C files are that are no object of the kernel build.
NO_OBJECTS = ("tools/", "scripts/", "Documentation/")


def cmd_file(obj):
    """kbuild's dependency list of obj (DIR/.NAME.o.cmd)."""
    d, n = os.path.split(obj)
    return os.path.join(d, "." + n + ".cmd")


def kernel_files(files, odir=None):
    """The files of `files` that a kernel build reads, or may read: all but
    those under NOT_KERNEL that are no Kconfig file (the top-level Kconfig
    sources Documentation/Kconfig) and that no object of the last build in
    odir read (its .cmd files list every source and header each object
    read: lib/test_printf.c includes a header of tools/testing/). Without
    a build there to tell, every file may be read."""
    reads = [f for f in files if not f.startswith(NOT_KERNEL) or
             os.path.basename(f).startswith("Kconfig")]
    rest = [f for f in files if f not in reads]
    if not rest:
        return reads
    if not odir or not os.path.exists(os.path.join(odir, "include/config/auto.conf.cmd")):
        return reads + rest
    # grep -F: a longer path that contains f counts too (stricter)
    reads += [f for f in rest
              if subprocess.run(["grep", "-rqF", "--include=.*.cmd", f, odir]).returncode != 1]
    return [f for f in files if f in reads]


def build_all(states, build, changed, shared=lambda st, of: None):
    """Build every state, the last first and then back to the first; a
    state whose difference from the state built last (changed(a, b)) is
    read by no kernel build shares that build's result (same sources,
    objects and warnings): then shared(state, state built) is called.
    build(state) -> result. Returns {state number: (result, of which state)}."""
    built = {}
    later = None
    for st in reversed(states):
        if later and not kernel_files(changed(st, later), ODIR):
            shared(st, later)
            built[st["n"]] = (built[later["n"]][0], later["n"])
            continue
        built[st["n"]] = (build(st), st["n"])
        later = st
    return built


def blob(state, path):
    rc, out = git("cat-file", "blob", "%s:%s" % (state["tree"], path))
    return out if rc == 0 else None


# ---------------------------------------------------------------- gates
def gate_checkpatch(st):
    key = sha("checkpatch", TOOLS, "debian-python", st["patch_sha"], file_sha(
        os.path.join(SRC, "scripts/checkpatch.pl")))
    res = cached(key)
    if res:
        return res, True
    # checkpatch runs scripts/spdxcheck.py with the python3 of PATH: Debian's
    # has python3-ply and python3-git for it (tools/deps)
    # Two message types are not judged here: UNKNOWN_COMMIT_ID, because the
    # base is a tarball import without upstream history, so no Fixes: id
    # can be found in it (the posting's fixes-tag lint checks the form);
    # FILE_PATH_CHANGES, a reminder on every new file that MAINTAINERS may
    # need a line, which the F: lines of Yama's entry already answer.
    rc, out = run(["perl", "scripts/checkpatch.pl", "--strict", "--codespell",
                   "--codespellfile", DICT, "--color=never",
                   "--ignore", "UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES", st["path"]],
                  cwd=SRC, env={"PATH": "/usr/bin:" + os.environ.get("PATH", "")})
    detail = []
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if re.match(r"^(ERROR|WARNING|CHECK):", l):
            detail.append(l)
            if i + 1 < len(lines) and lines[i + 1].startswith("#"):
                detail.append("  " + lines[i + 1])
    total = [l for l in lines if l.startswith("total:")]
    return keep(key, {"ok": rc == 0, "detail": detail[:10] + total})


def kdoc_run(state, paths):
    if not paths:
        return set()
    with tempfile.TemporaryDirectory(dir=G) as tmp:
        present = []
        for p in paths:
            text = blob(state, p)
            if text is None:
                continue
            os.makedirs(os.path.join(tmp, os.path.dirname(p)), exist_ok=True)
            write(os.path.join(tmp, p), text)
            present.append(p)
        if not present:
            return set()
        out = run(["perl", os.path.join(SRC, "scripts/kernel-doc"), "-none"] + present,
                  cwd=tmp)[1]
        return {norm(l) for l in diag_lines(out)}


def gate_kdoc(prev, st):
    files = [f for f in changed_files(prev, st) if f.endswith((".c", ".h"))]
    key = sha("kernel-doc", TOOLS, prev["tree"], st["tree"],
              file_sha(os.path.join(SRC, "scripts/kernel-doc")))
    res = cached(key)
    if res:
        return res, True
    new = sorted(kdoc_run(st, files) - kdoc_run(prev, files))
    return keep(key, {"ok": not new, "detail": new[:10], "files": files})


def selected_symbols(base, tip):
    """Symbols that a Kconfig line added by the series selects (or
    implies): set in the base config already, so that the patch adding the
    select does not change the config of the rest of the kernel."""
    out = git("diff", "--no-renames", "-U0", base["tree"], tip["tree"], "--", "*Kconfig*")[1]
    added = (re.match(r"^\+\s*(?:select|imply)\s+([A-Z0-9_]+)", l) for l in out.splitlines())
    return sorted({m.group(1) for m in added if m})


def base_selected_symbols(base, tip):
    """selected_symbols() that the base already defines (a symbol the
    series defines itself keeps its Kconfig default)."""
    return [sym for sym in selected_symbols(base, tip)
            if git("grep", "-q", "-E", r"^\s*(menu)?config\s+%s\s*$" % sym,
                   base["tree"], "--", "*Kconfig*")[0] == 0]


def fragment(tip, base=None):
    """The main config's fragment: what the gates need (BASE_FRAGMENT),
    then the test kernel's fragments in tools/test-kernel's order, the
    tests' config of the tip last, so that the tip's main config is the
    test kernel's config."""
    parts = [BASE_FRAGMENT]
    for path in run([os.path.join(WS, "tools/test-kernel"), "--fragments"],
                    check=True)[1].splitlines():
        parts.append(read(path))
    st_cfg = blob(tip, "tools/testing/selftests/yama/config")
    if st_cfg:
        parts.append(st_cfg)
    if base is not None:
        sel = base_selected_symbols(base, tip)
        if sel:
            parts.append("".join("CONFIG_%s=y\n" % s for s in sel))
    return "\n".join(parts)


def kbuild_warn():
    """W=1 as every kernel build of the workspace has it (tools/lib.sh)."""
    flags = os.environ.get("KBUILD_WARN")
    if not flags or "W=1" not in flags.split():
        sys.exit("error: KBUILD_WARN without W=1 (%r): run through "
                 "tools/series-check, which sets it from tools/lib.sh" % flags)
    return flags.split()


def link_args(odir):
    """The linker of a build folder, for its builds and its Kconfig runs
    alike: the test kernel's (KBUILD_LINK, tools/lib.sh), so that the main
    config's objects are the test kernel's in ccache; GNU ld, the default,
    for o-sysctl, which make check-debug links whole."""
    if odir == ODIRS["sysctl=n"]:
        return []
    link = os.environ.get("KBUILD_LINK")
    if not link or not link.startswith("LD="):
        sys.exit("error: KBUILD_LINK unset (%r): run through tools/series-check, "
                 "which sets it from tools/lib.sh" % link)
    return link.split()


def make_cmd(odir, link_odir=None):
    """make of the checkout into odir, linked as link_odir (default: odir)."""
    return ["make", "-C", SRC, "O=" + odir, "CC=" + CC] + link_args(link_odir or odir)


def make(args, log=None):
    """A W=1 build in ODIR; its output also goes to log."""
    rc, out = run(make_cmd(ODIR) + kbuild_warn() + ["-j" + JOBS] + args)
    if log:
        write(log, out)
    return rc, out


def base_config(base, frag):
    """allnoconfig of the base with the main fragment: the symbols the
    series adds are unknown there, so olddefconfig later gives them their
    defaults instead of allnoconfig's n. Made once (kept in cfg/), in
    o-config (Kconfig only), with the base checked out: call it before any
    state is checked out for a build. Also makes the base's .config of
    every matrix config (base_matrix_config(); Kconfig only, seconds)."""
    path = base_config_path(base, frag)
    if os.path.exists(path):
        return read(path)
    checkout(base)
    fpath = path + ".fragment"
    write(fpath, frag)
    progress("allnoconfig at the base")
    odir = os.path.join(G, "o-config")
    os.makedirs(odir, exist_ok=True)
    config = os.path.join(odir, ".config")
    rc, out = run(make_cmd(odir, ODIR_MAIN) + ["KCONFIG_ALLCONFIG=" + fpath, "allnoconfig"])
    if rc:
        sys.exit("error: allnoconfig failed:\n" + out[-2000:])
    text = read(config)
    for cfgname, extra in MATRIX.items():
        if not extra:
            continue
        write(config, text + "\n" + frag + extra)
        rc, out = run(make_cmd(odir, ODIRS.get(cfgname, ODIR_MAIN)) + ["olddefconfig"])
        if rc:
            sys.exit("error: olddefconfig (%s) failed:\n%s" % (cfgname, out[-2000:]))
        write(path + "." + cfgname, read(config))
    # the main config last: its presence says all of them are there
    write(path, text)
    return text


def base_config_path(base, frag):
    d = os.path.join(G, "cfg")
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "main2-%s.config" % sha(
        base["tree"], frag, os.environ.get("KBUILD_LINK", ""))[:12])


def base_matrix_config(base, cfgname):
    """The base's .config in matrix config cfgname (made by base_config)."""
    path = base_config_path(base, MAIN_FRAG[0])
    return read(path + ("." + cfgname if MATRIX.get(cfgname) else ""))


def config_symbols(config):
    """{symbol: value} of a .config; unset symbols are absent (a symbol
    the Kconfig of a tree does not define reads as unset too)."""
    return dict(re.findall(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$", config, re.M))


def changed_symbols(a, b):
    ca, cb = config_symbols(a), config_symbols(b)
    return sorted(s for s in set(ca) | set(cb) if ca.get(s) != cb.get(s))


MAIN_FRAG = [None]


def kconfig_inputs(commit):
    """What olddefconfig reads of a state besides its input and the tools
    (TOOLS): the Kconfig files, scripts/ (the helpers Kconfig calls), the
    top Makefile and the arch Makefiles it includes (the version and the
    variables they export), as one hash of their blob ids. Kept per
    commit."""
    def kconfig_reads(path):
        return path == "Makefile" or path.startswith("scripts/") or \
            re.match(r"arch/[^/]+/Makefile$", path) or \
            "Kconfig" in path.rsplit("/", 1)[-1]
    if commit not in KCONFIG_INPUTS:
        listing = gitout("ls-tree", "-r", commit)
        KCONFIG_INPUTS[commit] = sha("\n".join(
            l for l in listing.splitlines() if kconfig_reads(l.split("\t", 1)[1])))
    return KCONFIG_INPUTS[commit]


KCONFIG_INPUTS = {}


def configure(base, cfgname, frag):
    """Write .config for the checked-out state; return it and olddefconfig's
    output. Every config is the main config's allnoconfig at the base plus
    its fragment, through olddefconfig: a matrix config differs from the
    main one only where its fragment says, and symbols the series adds get
    their defaults. olddefconfig takes about 7 s (Kconfig's compiler
    probes): its result is kept by its input, the state's Kconfig inputs,
    the linker and the toolchain (cfg/olddef-KEY.config), so a state whose
    Kconfig files equal an earlier one's is not configured again, and a
    right .config is not rewritten (make then does not run syncconfig)."""
    text = base_config(base, MAIN_FRAG[0]) + "\n" + frag
    os.makedirs(ODIR, exist_ok=True)
    cfg = os.path.join(ODIR, ".config")
    key = sha("olddefconfig", TOOLS, text, " ".join(link_args(ODIR)),
              kconfig_inputs(CHECKED_OUT[0] or gitout("rev-parse", "HEAD")))
    kept = os.path.join(G, "cfg", "olddef-%s.config" % key)
    if os.path.exists(kept):
        result = read(kept)
        try:
            same = read(cfg) == result
        except OSError:
            same = False
        if not same:
            write(cfg, result, atomic=True)
        return result, ""
    write(cfg, text)
    rc, out = run(make_cmd(ODIR) + ["olddefconfig"])
    if rc:
        return None, out
    result = read(cfg)
    os.makedirs(os.path.dirname(kept), exist_ok=True)
    write(kept, result, atomic=True)
    return result, out


def config_value(config, sym):
    m = re.search(r"^%s=(.*)$" % re.escape(sym), config, re.M)
    return m.group(1) if m else None


def members():
    """Objects that are part of the current vmlinux (its thin archives)."""
    objs = set()
    for a in ("vmlinux.a", "lib/lib.a", "arch/x86/lib/lib.a"):
        if os.path.exists(os.path.join(ODIR, a)):
            # ar prints thin members relative to its working directory
            objs.update(os.path.normpath(os.path.join(ODIR, l.strip()))
                        for l in run(["ar", "t", a], cwd=ODIR)[1].splitlines())
    return objs


def in_scope(obj, scope):
    """Whether object `obj` (absolute, in ODIR) can compile differently at
    the tip than at the base in the same config: its kbuild dependency list
    (.OBJ.cmd) names a file the series touches, or a config symbol whose
    value differs between the two configs (include/config/SYM). An object
    that does neither compiles the same bytes with the same flags at both,
    so it has the base's warnings. An object without a .cmd counts as in
    scope."""
    try:
        deps = read(cmd_file(obj), errors="replace")
    except OSError:
        return True
    rel = os.path.relpath(obj, ODIR)[:-2]
    if any(f.startswith(rel + ".") or "/" + f in deps for f in scope["files"]):
        return True
    return any("include/config/%s)" % s in deps or "include/config/%s " % s in deps
               for s in scope["symbols"])


def line_in_scope(line, scope, objs):
    """make's own lines (objtool, ld, modpost) under a scope: a line about
    a touched file or an in-scope object counts; one that names no file of
    the source tree (ld, vmlinux.o) counts too."""
    f = norm(line).split(":", 1)[0]
    if f in scope["files"]:
        return True
    stem = re.sub(r"\.(c|h|o|S)$", "", f)
    if stem == f:
        return True
    obj = os.path.join(ODIR, stem + ".o")
    if obj in objs:
        return in_scope(obj, scope)
    return not os.path.exists(os.path.join(SRC, f))


def state_warnings(output, scope=None, targets=None):
    """All warnings of the current build state: the compiler's, kept per
    object by cc-wrap (also for objects this build did not recompile), and
    make's own (make_diags). With a scope (the tip's matrix builds), only
    those of objects in_scope() (main() says why that is enough); with
    targets (objects built alone, no vmlinux), those objects' only.
    Returns the warnings and, per warning, the objects that gave it
    (relative to the build directory; "(make)" for make's own lines)."""
    objs = {os.path.join(ODIR, t) for t in targets} if targets else members()
    warns = set()
    sources = collections.defaultdict(set)
    for root, dirs, files in os.walk(ODIR):
        if root == ODIR:
            dirs[:] = [d for d in dirs if d not in ("scripts", "tools", "usr")]
        for fn in files:
            if fn.endswith(".o.warn"):
                obj = os.path.join(root, fn[:-5])
                if obj in objs and (scope is None or in_scope(obj, scope)):
                    for w in warn_file(os.path.join(root, fn)):
                        warns.add(w)
                        sources[w].add(os.path.relpath(obj, ODIR))
    for l in make_diags(output):
        if scope is None or line_in_scope(l, scope, objs):
            w = norm(l)
            warns.add(w)
            if w in sources:
                continue    # the compiler's line of an object built now
            # a line about one object of vmlinux (objtool) is that object's
            named = os.path.join(ODIR, w.split(":", 1)[0])
            sources[w].add(os.path.relpath(named, ODIR)
                           if named.endswith(".o") and named in objs else "(make)")
    return warns, {w: sorted(v) for w, v in sources.items()}


def build_state(base, state, cfgname, frag, scope=None, targets=None):
    """Build `state` in config cfgname; cached by tree + config (+ scope:
    then only the warnings of in_scope() objects are recorded; + targets:
    then only those objects are made, no vmlinux)."""
    key = sha("build", TOOLS, cfgname, frag, state["tree"],
              json.dumps(scope, sort_keys=True) if scope else "",
              *(targets or []))
    res = cached(key)
    if res:
        return res, True
    use_odir(cfgname)
    checkout(state)
    config, out = configure(base, cfgname, frag)
    if config is None:
        return keep(key, {"ok": False, "detail": ["olddefconfig failed"] + first_errors(out),
                          "warnings": []})
    sym, want = MATRIX_EXPECT.get(cfgname, (None, None))
    if sym and config_value(config, sym) != want:
        return keep(key, {"ok": False, "warnings": [], "detail": [
            "%s is %s in .config, wanted %s" % (sym, config_value(config, sym), want or "unset")]})
    if scope is not None:
        # the symbols whose value the tip's config changed against the
        # base's config of the same matrix entry (in_scope)
        scope = dict(scope, symbols=changed_symbols(
            base_matrix_config(base, cfgname), config))
        progress("  warnings counted in objects that read one of the %d files "
                 "the series touches or a changed symbol: %s" % (
                     len(scope["files"]),
                     " ".join("CONFIG_" + s for s in scope["symbols"]) or "none"))
    t = time.time()
    goals = targets or ["vmlinux"]
    progress("  make W=1 %s (%s) ..." % (" ".join(goals), cfgname))
    rc, out = make(goals, log=os.path.join(G, "last-build.log"))
    progress("  make done in %ds (rc %d)" % (time.time() - t, rc))
    if rc:
        # a failed build is not cached: its cause may be outside the inputs
        return {"ok": False, "detail": first_errors(out), "warnings": []}, False
    if not targets:
        write(os.path.join(ODIR, ".objects"), "%d\n" % objects_since(ODIR))
    warns, sources = state_warnings(out, scope, targets)
    return keep(key, {
        "ok": True, "detail": [], "warnings": sorted(warns), "sources": sources,
        "scope": scope, "targets": targets or [],
        "config": {s: config_value(config, s) for s in (
            "CONFIG_SECURITY_YAMA", "CONFIG_SYSCTL", "CONFIG_SECURITY_PATH",
            "CONFIG_SECURITY_YAMA_PTRACE_SCOPE", "CONFIG_SECURITY_YAMA_SYMLINKS",
            "CONFIG_SECURITY_YAMA_HARDLINKS", "CONFIG_SECURITY_YAMA_KUNIT_TEST",
            "CONFIG_KUNIT")}})


def base_warnings(base, frag, objs):
    """The base's warnings in the main config from the given objects only,
    those that warn in some build of the series (make -k W=1 of just them,
    in o-main): only such an object can tell a new warning from the base's,
    so the base is never built whole. An object the base does not build in
    the main config (new source, symbol off at the base, a matrix config's
    only) is not made: its warnings count as new. make's own lines about
    a made object (objtool) count too."""
    use_odir("main")
    objs = sorted(objs)
    key = sha("base-warnings-2", TOOLS, frag, base["tree"], *objs)
    res = cached(key)
    if res:
        return res, True
    if not objs:
        return {"ok": True, "warnings": [], "objs": []}, False
    checkout(base)
    config, out = configure(base, "main", frag)
    if config is None:
        return {"ok": False, "detail": ["olddefconfig failed"] + first_errors(out)}, False
    progress("  make W=1 %s (base) ..." % " ".join(objs))
    for o in objs:
        # cc-wrap writes OBJ.warn only when the compiler printed something
        for f in (os.path.join(ODIR, o), os.path.join(ODIR, o + ".warn")):
            if os.path.exists(f):
                os.unlink(f)
    rc, out = make(["-k"] + objs)
    made = [o for o in objs if os.path.exists(os.path.join(ODIR, o))]
    warns = set()
    for o in made:
        try:
            warns |= warn_file(os.path.join(ODIR, o + ".warn"))
        except OSError:
            pass
    warns.update(w for w in map(norm, make_diags(out)) if w.split(":", 1)[0] in made)
    progress("  %d of %d made at the base (the others are not built there)" % (
        len(made), len(objs)))
    return keep(key, {"ok": True, "warnings": sorted(warns), "objs": objs, "made": made})


def series_objects(files):
    """The objects of the C files the series touches that the main config
    builds (they have a .cmd in o-main after the tip's build)."""
    objs = [f[:-2] + ".o" for f in sorted(files)
            if f.endswith(".c") and not f.startswith(NO_OBJECTS)]
    return [o for o in objs if os.path.exists(cmd_file(os.path.join(ODIR, o)))]


def sparse_targets(files):
    """Objects to run sparse on: the touched C files that are built, and for
    a touched header the built C files of its directory."""
    def built(o):
        # the object, or its .cmd (the object may have been removed by
        # forget_deleted_headers; make C=2 rebuilds it)
        return os.path.exists(os.path.join(ODIR, o)) or \
            os.path.exists(cmd_file(os.path.join(ODIR, o)))

    objs = set()
    for f in files:
        if f.endswith(".c"):
            if built(f[:-2] + ".o") and os.path.exists(os.path.join(SRC, f)):
                objs.add(f[:-2] + ".o")
        elif f.endswith(".h") and os.path.isdir(os.path.join(ODIR, os.path.dirname(f))):
            for fn in os.listdir(os.path.join(ODIR, os.path.dirname(f))):
                m = re.match(r"^\.?(.*\.o)(\.cmd)?$", fn)
                o = m and os.path.join(os.path.dirname(f), m.group(1))
                if m and os.path.exists(os.path.join(SRC, o[:-2] + ".c")) and built(o):
                    objs.add(o)
    return sorted(objs)


def sparse_state(base, state, files, frag):
    """Sparse (make C=2) on the given files at `state`, per file."""
    key = sha("sparse-2", TOOLS, file_sha(SPARSEWRAP), frag, state["tree"], *files)
    res = cached(key)
    if res:
        return res, True
    # sparse_targets() takes objects of the build: none is under NOT_KERNEL
    if not any(f.endswith((".c", ".h")) and not f.startswith(NOT_KERNEL)
               for f in files):
        return {"ok": True, "files": {}, "objs": []}, False
    use_odir("main")
    checkout(state)
    configure(base, "main", frag)
    objs = sparse_targets(files)
    per = {}
    if objs:
        progress("  sparse on %s" % " ".join(objs))
        rc, out = make(["C=2", "CHECK=%s sparse" % SPARSEWRAP] + objs)
        if rc:
            return {"ok": False, "detail": first_errors(out), "files": {}}, False
        per = {o[:-2] + ".c": [] for o in objs}
        # only sparse's own lines (sparse-wrap marks them)
        mine = "\n".join(l[len("sparse| "):] for l in out.splitlines()
                         if l.startswith("sparse| "))
        for w in map(norm, diag_lines(mine)):
            per.setdefault(w.split(":", 1)[0], []).append(w)
    return keep(key, {"ok": True, "files": per, "objs": objs})


SPHINX = {"doc", "ref", "c:func", "c:type", "c:macro", "c:data", "c:member",
          "c:struct", "manpage", "kbd", "file", "envvar", "option", "command",
          "program", "abbr", "kernel-doc", "toctree", "code-block", "only",
          "c:function", "index", "glossary", "tabularcolumns",
          "kernel-figure", "kernel-render", "kernel-include", "kernel-feat",
          "kernel-abi", "highlight", "literalinclude", "ss", "sup", "sub",
          "menuselection", "guilabel"}


def rst_check(state, paths):
    """docutils' errors in the rst files `paths` of `state`; Sphinx's own
    roles and directives (SPHINX) are not errors."""
    try:
        import docutils.core
        import docutils.nodes
    except ImportError:
        return {"ok": False, "detail": ["python3-docutils is missing"]}
    problems = []
    for p in paths:
        text = blob(state, p)
        if text is None:
            continue
        doc = docutils.core.publish_doctree(
            text, source_path=p, settings_overrides={
                "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(),
                "file_insertion_enabled": False, "raw_enabled": False})
        walk = doc.findall if hasattr(doc, "findall") else doc.traverse
        for msg in walk(docutils.nodes.system_message):
            if msg["level"] < 3:
                continue
            body = msg.astext()
            m = re.search(r'(?:Unknown interpreted text role|Unknown directive type|'
                          r'No role entry for|No directive entry for)\s+"([^"]+)"', body)
            if m and m.group(1).lower() in SPHINX:
                continue
            if "Trying" in body and "as canonical role name" in body:
                continue
            first = body.splitlines()[0][:200]
            problems.append(first if first.startswith(p) else "%s:%s: %s" % (
                p, msg.get("line", "?"), first))
    return {"ok": not problems, "detail": problems[:10], "files": paths}


# ---------------------------------------------------------------- main
def main():
    os.makedirs(G, exist_ok=True)
    lock = open(os.path.join(G, "lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        progress("waiting for another series-check to finish")
        fcntl.flock(lock, fcntl.LOCK_EX)
    base_commit = ensure_src()
    names = series.patch_names(SERIES_DIR)
    print("  series: %s (%d patches)" % (SERIES_DIR, len(names)), flush=True)
    states, bad, bad_err = apply_series(base_commit, names)
    base, tip = states[0], states[-1]
    frag = fragment(tip, base)
    MAIN_FRAG[0] = frag
    base_config(base, frag)
    cells = {}          # row -> gate -> {"status", "detail", "cached"}
    rows = []

    def cell(row, gate, res=None, from_cache=False, status=None):
        """A cell from a gate's result (ok, detail); pass when there is none."""
        res = res or {"ok": True}
        cells.setdefault(row, {})[gate] = {
            "status": status or ("pass" if res["ok"] else "FAIL"),
            "detail": res.get("detail") or [], "cached": from_cache}

    # The builds, tip first and then back to patch 1: the tip is the one
    # full build (patch 1 changes include/linux/security.h, which nearly
    # every object reads), each earlier state rebuilds only what its patch
    # changed. Then the tip's matrix. The table is made from the results.
    def build_main(st):
        progress("build (main) of patch %d/%d" % (st["n"], len(names)))
        return build_state(base, st, "main", frag)

    def shared(st, of):
        progress("build (main) of patch %d/%d: what differs from patch %d is "
                 "read by no kernel build: its build" % (st["n"], len(names), of["n"]))

    # patch number -> (result, from the cache)
    built = {n: res for n, (res, _) in build_all(states[1:], build_main,
                                                 changed_files, shared).items()}
    scope = {"files": changed_files(base, tip)}
    matrix = {}
    if len(states) > 1 and not bad:
        for cfgname in MATRIX_GATES:
            targets = None
            if (cfgname == "sysctl=n" and not SYSCTL_N_WHOLE) or \
                    cfgname == "kunit-test=y":
                use_odir("main")
                targets = series_objects(scope["files"])
                if not targets:
                    progress("tip: %s: the series touches no C file the main "
                             "config builds: nothing to compile" % cfgname)
                    matrix[cfgname] = ({"ok": True, "warnings": [], "targets": [],
                                        "none": True, "detail": []}, False)
                    continue
                progress("tip: build %s: the series' objects only (%s; the whole "
                         "kernel in make check-debug)" % (cfgname, " ".join(targets)))
            else:
                progress("tip: build %s" % cfgname)
            matrix[cfgname] = build_state(base, tip, cfgname, frag + MATRIX[cfgname],
                                          scope, targets)
    # The base's warnings, from the objects that warned in a build above
    # (base_warnings). A warning make printed itself (ld, objtool) has no
    # object: then the base is built whole, as its own state.
    warned = set()
    whole = False
    for res, _ in list(built.values()) + list(matrix.values()):
        for w, srcs in (res.get("sources") or {}).items():
            objs = [o for o in srcs if o != "(make)"]
            whole |= not objs
            warned.update(objs)
    if whole:
        progress("base: build (main), whole: a warning of make's own is in a build")
        res, _ = build_state(base, base, "base-whole", frag)
    else:
        progress("base: warnings of the %d object(s) that warn in the series" % len(warned))
        res, _ = base_warnings(base, frag, warned)
    if not res["ok"]:
        sys.exit("error: the base does not build in config main:\n  %s" %
                 "\n  ".join(res["detail"]))
    base_warn = set(res["warnings"])

    # The sparse baseline: the base's security/ (where the series lives)
    # and the other C files the series touches that the base has (fs/namei.c
    # has sparse context warnings of its own). Taken after the builds
    # (sparse_targets needs their .cmd files), with base_warnings, so the
    # base is checked out once.
    base_files = set(gitout("ls-tree", "-r", "--name-only", base["tree"]).splitlines())
    sec_files = sorted({f for f in base_files
                        if f.startswith("security/") and f.endswith(".c")} |
                       {f for f in scope["files"]
                        if f.endswith(".c") and f in base_files and
                        not f.startswith(NO_OBJECTS)})
    progress("base: sparse baseline of security/")
    sbase, _ = sparse_state(base, base, sec_files, frag)
    if not sbase.get("objs"):
        sys.exit("error: the sparse baseline found no object of %s built in "
                 "config main (%s)" % (" ".join(sec_files[:3]), sbase.get("detail")))
    # per file, a multiset: the base's yama_lsm.c already has four identical
    # address-space errors, a fifth one is new
    sparse_known = {f: collections.Counter(v) for f, v in sbase.get("files", {}).items()}

    charged = set()
    for st in states[1:]:
        row = "%d %s" % (st["n"], st["name"])
        rows.append(row)
        prev = states[st["n"] - 1]
        print("  -- patch %d/%d: %s" % (st["n"], len(names), st["subject"]), flush=True)
        cell(row, "apply")
        progress("checkpatch")
        cell(row, "checkpatch", *gate_checkpatch(st))
        progress("kernel-doc")
        cell(row, "kernel-doc", *gate_kdoc(prev, st))
        res, c = built[st["n"]]
        if not res["ok"]:
            cell(row, "build", res, c)
            cell(row, "sparse", {"detail": ["not run: the build failed"]}, status="-")
            continue
        extra = set(res["warnings"]) - base_warn
        cell(row, "build", new_in(extra - charged), c)
        charged |= extra
        progress("sparse")
        res, c = sparse_state(base, st, changed_files(prev, st), frag)
        if not res["ok"]:
            cell(row, "sparse", res, c)
            continue
        new = []
        for f, ws in sorted(res["files"].items()):
            cur = collections.Counter(ws)
            new += sorted((cur - sparse_known.get(f, collections.Counter())).elements())
            sparse_known[f] = cur
        cell(row, "sparse", new_in(new) if res["objs"] else
             {"ok": not new, "detail": ["no built C file touched"]}, c)
    if bad:
        row = "%d %s" % (len(states), bad)
        rows.append(row)
        cell(row, "apply", {"ok": False, "detail": bad_err})
        rows += ["%d %s" % (n, name)
                 for n, name in enumerate(names[len(states):], len(states) + 1)]

    # The tip: config matrix and documentation.
    if len(states) > 1 and not bad:
        rows.append("tip")
        # A warning of the tip in a matrix config is new when the base in
        # that config did not have it. Only an object that reads a touched
        # file or a symbol whose value differs between the base's and the
        # tip's .config of that entry can compile differently at the two
        # (in_scope), so the matrix builds record only those objects'
        # warnings and compare them with the base's main-config ones instead
        # of building the base in every matrix config (two more full builds
        # on a cold run). Stricter, never weaker: a warning such an object
        # had at the base only in the matrix config shows up red, and can
        # then be allowed by name (BASE_MATRIX_WARNINGS).
        for cfgname in MATRIX_GATES:
            res, c = matrix[cfgname]
            if res.get("none"):
                cell("tip", cfgname, {"detail": ["no C file of the series is built"]}, c,
                     status="-")
            elif res["ok"]:
                alone = ["compiled alone: " + " ".join(res["targets"])] \
                    if res.get("targets") else []
                new = new_in(w for w in set(res["warnings"]) - base_warn
                             if not excused(cfgname, w, scope["files"]))
                cell("tip", cfgname, dict(new, detail=new["detail"] or alone), c)
            else:
                cell("tip", cfgname, res, c)
        progress("tip: rst")
        cell("tip", "rst", rst_check(tip, sorted(
            {f for f in scope["files"] if f.endswith(".rst")} |
            {"Documentation/admin-guide/LSM/Yama.rst"})))
    return report(names, base, tip, rows, cells)


def new_in(warnings):
    """A cell's result from the warnings a build has that are new."""
    new = sorted(warnings)
    return {"ok": not new, "detail": ["new: " + w for w in new[:10]]}


def report(names, base, tip, rows, cells):
    """The table (stdout, OUTP.txt), OUTP.json and OUTP.counts; the exit
    code."""
    status = collections.Counter(c["status"] for r in cells.values() for c in r.values())
    passed, failed = status["pass"], status["FAIL"]
    width = min(max([len(r) for r in rows] + [10]), 60)
    lines = ["Series gates: %s on base %s, tip %s" % (
        SERIES_DIR, base["commit"][:12], tip["commit"][:12])]

    def table(gates, rws):
        lines.append("%-*s  %s" % (width, "patch", "  ".join("%-12s" % g for g in gates)))
        for r in rws:
            lines.append("%-*s  %s" % (width, r[:width], "  ".join(
                "%-12s" % cells.get(r, {}).get(g, {"status": "-"})["status"]
                for g in gates)))

    table(PATCH_GATES, [r for r in rows if r != "tip"])
    if "tip" in cells:
        lines.append("")
        table(TIP_GATES, ["tip"])
    red = [(r, g, c) for r in rows for g, c in cells.get(r, {}).items()
           if c["status"] == "FAIL"]
    if red:
        lines += ["", "Red cells:"]
        for r, g, c in red:
            lines.append("  %s / %s:" % (r, g))
            lines += ["    " + d for d in (c["detail"] or ["(no detail)"])[:8]]
    lines += ["", "%d cells passed, %d failed" % (passed, failed)]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(OUTP), exist_ok=True)
    write(OUTP + ".txt", text)
    write(OUTP + ".json", json.dumps({
        "series_dir": SERIES_DIR, "base": base["commit"], "tip": tip["commit"],
        "tip_tree": tip["tree"], "patches": names, "rows": rows,
        "patch_gates": PATCH_GATES, "tip_gates": TIP_GATES, "cells": cells,
        "passed": passed, "sysctl_n": SYSCTL_N,
        "linker": (link_args(ODIR_MAIN) or ["LD=ld"])[0][3:],
        "failed": failed, "elapsed": int(time.time() - T0),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1))
    write(OUTP + ".counts", "%d %d\n" % (passed, failed))
    print(text, end="")
    print("  results: %s.txt, %s.json" % (OUTP, OUTP), flush=True)
    return 1 if failed or not names else 0


if __name__ == "__main__":
    sys.exit(main())
