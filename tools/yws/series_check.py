"""series-check: the per-patch gates.

Each commit of the series (base..HEAD without b4's cover commit) on its
own: checkpatch --strict, a W=1 build of vmlinux with no warning that the
base or an earlier patch did not have, sparse on the touched files with no
new finding, kernel-doc of the touched files against their previous
version; the tip also in a config matrix, and its rst must parse. Builds
run in build/series-check/author (a --shared clone of the author's tree:
the only checkout switched) into build/series-check/o/*, the tip first and then back to patch 1 (patch 1
changes security.h, read by nearly every object: forward would cost two
near-full builds). The base is never built whole: only objects that warn
in the series are compiled there. cache/ keeps each result under a hash of
all its inputs: a warm run builds nothing instead of a near-full rebuild.
"""
import collections
import functools
import hashlib
import io
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from . import qemu
from . import prep
from . import ws as W
from .ws import Stage, StageError, git

HERE = Path(__file__).resolve().parent
CCWRAP, SPARSEWRAP = HERE / "cc-wrap", HERE / "sparse-wrap"
DICT = "/usr/lib/python3/dist-packages/codespell_lib/data/dictionary.txt"
# Not judged: UNKNOWN_COMMIT_ID, because the base is a tarball import
# without upstream history, so no Fixes: id can be found in it (the
# posting's lint checks the tag's form); FILE_PATH_CHANGES, the reminder on
# every new file that MAINTAINERS may need a line, which the F: lines of
# Yama's entry already answer; SYMBOLIC_PERMS, which flags every S_I*
# token: the link rules spell their mode masks S_ISVTX | S_IWOTH and
# S_ISGID | S_IXGRP as fs/namei.c does (v3 review), not as octal.
CHECKPATCH_IGNORE = "UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES,SYMBOLIC_PERMS"
PATCH_GATES = ["checkpatch", "build", "sparse", "kernel-doc"]
MATRIX_GATES = ["yama=n", "sysctl=n", "kunit-test=y"]
# The main config is the test kernel's (qemu.py merges the same fragments),
# so its objects come from ccache; this part says what the gates need.
# SECURITY_PATH from the base on: no patch flips a symbol security.h tests.
BASE_FRAGMENT = ("CONFIG_SECURITY=y\nCONFIG_SECURITY_PATH=y\nCONFIG_SECURITY_YAMA=y\n"
                 "CONFIG_SYSCTL=y\nCONFIG_PROC_SYSCTL=y\n")
MATRIX = {"main": "", "base-whole": "",
          "yama=n": "# CONFIG_SECURITY_YAMA is not set\n",
          # PROC_SYSCTL (which selects SYSCTL) has a prompt only with EXPERT
          "sysctl=n": "CONFIG_EXPERT=y\n# CONFIG_PROC_SYSCTL is not set\n"
                      "# CONFIG_SYSCTL is not set\n",
          "kunit-test=y": "CONFIG_KUNIT=y\nCONFIG_SECURITY_YAMA_KUNIT_TEST=y\n"}
EXPECT = {"yama=n": ("CONFIG_SECURITY_YAMA", None), "sysctl=n": ("CONFIG_SYSCTL", None),
          "kunit-test=y": ("CONFIG_SECURITY_YAMA_KUNIT_TEST", "y")}
# One O= folder per config that changes what nearly every object reads
# (sysctl.h, autoconf.h), so warm runs never flip a folder between them;
# yama=n shares o/main. o/sysctl links with GNU ld (check-debug links it).
# Two levels under build/series-check, as the test kernel is one under
# build/: the sources are then ../../author for both, and the test kernel
# (the main config at the tip) takes the tip's objects from ccache.
ODIRS = {"sysctl=n": "sysctl", "kunit-test=y": "kunit", "base-whole": "base"}
# Warnings the base has in a matrix config, in files the series does not
# touch: max_rt_runtime is used only by the sched_rt sysctl handler.
BASE_MATRIX_WARNINGS = {"sysctl=n": [("kernel/sched/rt.c", r"'max_rt_runtime' defined but not used")]}
# Files no kernel build reads (unless Kconfig, or named in a .cmd file).
NOT_KERNEL = ("Documentation/", "tools/testing/", "MAINTAINERS")
NO_OBJECTS = ("tools/", "scripts/", "Documentation/")
SPHINX = set("""doc ref c:func c:type c:macro c:data c:member c:struct manpage kbd
    file envvar option command program abbr kernel-doc toctree code-block only
    c:function index glossary tabularcolumns kernel-figure kernel-render
    kernel-include kernel-feat kernel-abi highlight literalinclude ss sup sub
    menuselection guilabel""".split())
TOOLS = ("gcc", "as", "ld.bfd", "ld.lld", "pahole", "sparse", "perl")

ANSI = re.compile(r"\x1b\[[0-9;]*[mK]")
DIAG = re.compile(r"(^|[\s:])(warning|error|WARNING|ERROR):")
KDOC_LINE = re.compile(r"^[^\s:]+:\d+: (warning|error):")


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def norm(line):
    """A warning without build paths and line numbers, so the same warning
    matches across patches that move code."""
    line = ANSI.sub("", line).strip()
    line = re.sub(r"(^|\s)((\.\./)+author/|\S*/series-check/(author|o/[\w=-]+)/)", r"\1", line)
    line = re.sub(r"^(\S+?):\d+(:\d+)?:", r"\1:", line)
    return re.sub(r"\s+", " ", line)


def diag_lines(text):
    """The diagnostic lines of text, without gcc's quoted source lines."""
    lines = (ANSI.sub("", ln).rstrip() for ln in text.splitlines())
    return [ln for ln in lines if DIAG.search(ln) and not ln.lstrip().startswith("|")]


def first_errors(text, n=8):
    lines = [ln for ln in text.splitlines()
             if re.search(r"error|Error|undefined reference|\*\*\*", ln)]
    return (lines or text.splitlines()[-n:])[:n]


def config_value(config, sym):
    return dict(re.findall(r"^(CONFIG_\w+)=(.*)$", config, re.M)).get(sym)


def checkpatch_verdict(rc, output):
    """checkpatch's exit status is the verdict (1 on any ERROR, WARNING or
    CHECK under --strict); its lines are the detail."""
    lines = output.splitlines()
    detail = []
    for i, ln in enumerate(lines):
        if re.match(r"^(ERROR|WARNING|CHECK):", ln):
            detail.append(ln)
            if i + 1 < len(lines) and lines[i + 1].startswith("#"):
                detail.append("  " + lines[i + 1])
    detail = detail[:10] + [ln for ln in lines if ln.startswith("total:")]
    if rc and not detail:
        detail = ["checkpatch exit %d" % rc] + lines[-5:]
    return {"ok": rc == 0, "detail": detail}


def state_warnings(odir, output, objs):
    """{warning: [objects]} of a build state: each object's compiler lines
    kept by cc-wrap (OBJ.warn, also of objects this build kept), and
    make's own lines ("(make)" when they name no object of objs)."""
    found = collections.defaultdict(set)
    for obj in objs:
        wf = Path(str(obj) + ".warn")
        if wf.exists():
            for ln in diag_lines(wf.read_text(errors="replace")):
                found[norm(ln)].add(os.path.relpath(obj, odir))
    for w in (norm(ln) for ln in diag_lines(output) if not KDOC_LINE.match(ln)):
        if w not in found:    # make's own (ld, objtool); kernel-doc lines are not its
            named = Path(odir) / w.split(":", 1)[0]
            found[w].add(str(named.relative_to(odir)) if named in objs else "(make)")
    return {w: sorted(v) for w, v in found.items()}


def new_in(warnings):
    new = sorted(warnings)
    return {"ok": not new, "detail": ["new: " + w for w in new[:10]]}


def excused(cfg, warning, touched):
    f = warning.split(":", 1)[0]
    msg = warning.replace("\u2018", "'").replace("\u2019", "'")
    return f not in touched and any(f == ef and re.search(rx, msg)
                                    for ef, rx in BASE_MATRIX_WARNINGS.get(cfg, []))


def judge(states, base_warn, sparse_base, matrix, rst, touched):
    """The table {row: {gate: cell}} from the gates' results, in patch
    order. states: [{n, checkpatch, kdoc, build, sparse}]. A build warning
    is new when the base did not have it and no earlier patch brought it;
    a sparse finding when the file did not have it before (a multiset)."""
    cells, charged = {}, set()
    known = {f: collections.Counter(v) for f, v in sparse_base.items()}

    def cell(row, gate, res, status=None):
        cells.setdefault(row, {})[gate] = {
            "status": status or ("pass" if res["ok"] else "FAIL"),
            "detail": res.get("detail") or []}

    for st in states:
        row = "patch %d/%d" % (st["n"], len(states))
        cell(row, "checkpatch", st["checkpatch"])
        cell(row, "kernel-doc", st["kdoc"])
        b = st["build"]
        if not b["ok"]:
            cell(row, "build", b)
            cell(row, "sparse", {"detail": ["not run: the build failed"]}, "-")
            continue
        extra = set(b["warnings"]) - base_warn
        cell(row, "build", new_in(extra - charged))
        charged |= extra
        s, new = st["sparse"], []
        for f, found in sorted(s.get("files", {}).items()):
            cur = collections.Counter(found)
            new += sorted((cur - known.get(f, collections.Counter())).elements())
            known[f] = cur
        cell(row, "sparse", new_in(new) if s.get("ok", True) else s)
    if matrix:
        for cfg, res in matrix.items():
            if res.get("none"):
                cell("tip", cfg, {"detail": ["no C file of the series is built"]}, "-")
            elif res["ok"]:
                cell("tip", cfg, new_in(w for w in set(res["warnings"]) - base_warn
                                        if not excused(cfg, w, touched)))
            else:
                cell("tip", cfg, res)
        cell("tip", "rst", rst)
    return cells


def rst_check(texts):
    """docutils' errors in {path: rst text}; Sphinx's own roles and
    directives are no errors."""
    import docutils.core
    import docutils.nodes
    problems = []
    for p, text in texts.items():
        doc = docutils.core.publish_doctree(text, source_path=p, settings_overrides={
            "report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(),
            "file_insertion_enabled": False, "raw_enabled": False})
        for msg in doc.findall(docutils.nodes.system_message):
            body = msg.astext()
            m = re.search(r'(?:Unknown interpreted text role|Unknown directive type|'
                          r'No role entry for|No directive entry for)\s+"([^"]+)"', body)
            if msg["level"] < 3 or (m and m.group(1).lower() in SPHINX) or \
                    ("Trying" in body and "as canonical role name" in body):
                continue
            problems.append("%s:%s: %s" % (p, msg.get("line", "?"), body.splitlines()[0][:200]))
    return {"ok": not problems, "detail": problems[:10]}


@functools.cache
def tool_versions():
    try:
        return [subprocess.run([t, "--version"], capture_output=True,
                               text=True).stdout.split("\n", 1)[0] for t in TOOLS]
    except OSError as e:
        raise StageError("%s (make deps installs it)" % e)


class Gates:
    """One run of the gates: the clone, the O= folders and the cache."""

    def __init__(self, ws, whole=False):
        self.ws, self.whole = ws, whole
        self.g = ws.dir("series-check")
        self.src, self.o = self.g / ws.tree.name, self.g / "o"
        self.cache = self.g / "cache"
        self.cache.mkdir(exist_ok=True)
        self.head = None
        self.jobs = "-j%d" % (os.cpu_count() or 2)
        self.key0 = sha(*(p.read_bytes() for p in (Path(__file__), CCWRAP, SPARSEWRAP)),
                        W.KBUILD_FLAGS, *tool_versions())

    # -- the cache: a result by a hash of all its inputs
    def cached(self, parts, fn):
        path = self.cache / (sha(self.key0, *parts) + ".json")
        if path.exists():
            return json.loads(path.read_text())
        res = fn()
        if not res.pop("transient", False):
            path.with_suffix(".tmp").write_text(json.dumps(res))
            path.with_suffix(".tmp").replace(path)
        return res

    # -- the checkout
    def clone(self):
        W.shared_clone(self.ws.tree, self.src, "refs/gates/tip")
        if (self.src / ".config").exists():
            raise StageError("%s was built in place; remove it" % self.src)

    def checkout(self, commit):
        old = git(self.src, "rev-parse", "-q", "--verify", "HEAD", check=False)
        git(self.src, "checkout", "-q", "-f", "--detach", commit)
        self.head = commit
        if old and old != commit:
            self.forget_deleted_headers(old, commit)

    def forget_deleted_headers(self, old, new):
        """make does not rebuild an object when a header it read is gone
        (a patch including a header only a later patch adds would pass on
        an object built later): remove the objects that read one. A header
        renamed is gone too (git diff's rename detection would call it R)."""
        gone = [f for f in git(self.src, "diff", "--name-only", "--no-renames",
                               "--diff-filter=D", old, new).split() if f.endswith(".h")]
        for od in self.o.glob("*"):
            for f in gone:
                hits = subprocess.run(["grep", "-rlF", "--include=*.o.cmd", f, od],
                                      capture_output=True, text=True).stdout.split()
                for cmd in map(Path, hits):
                    cmd.with_name(cmd.name[1:-4]).unlink(missing_ok=True)

    def changed(self, a, b):
        return git(self.src, "diff", "--name-only", "--no-renames", a["tree"], b["tree"]).split()

    def blob(self, st, path):
        r = subprocess.run(["git", "-C", self.src, "cat-file", "blob", "%s:%s" % (st["tree"], path)],
                           capture_output=True, text=True, errors="replace")
        return r.stdout if r.returncode == 0 else None

    def kernel_reads(self, files):
        """Whether a kernel build may read one of files (a .cmd names it)."""
        odir = self.o / "main"
        return any(not f.startswith(NOT_KERNEL) or Path(f).name.startswith("Kconfig") or
                   not (odir / "vmlinux").exists() or
                   subprocess.run(["grep", "-rqF", "--include=.*.cmd", f, odir]).returncode != 1
                   for f in files)

    # -- kbuild
    def make(self, odir, *args):
        log = self.g / "make.log"
        log.write_text("")
        flags = [f for f in W.KBUILD_FLAGS if not (odir.name == "sysctl" and f.startswith("LD="))]
        r = W.run(["make", "-C", self.src, "O=%s" % odir, "ARCH=x86_64",
                   "CC=%s ccache gcc" % CCWRAP, *flags, self.jobs, *args],
                  env={**qemu.make_env(self.ws), "LC_ALL": "C"}, log=log, check=False,
                  label="make %s (%s)" % (" ".join(args)[:40], odir.name))
        return r.returncode, log.read_text(errors="replace")

    def fragment(self, base, tip):
        """BASE_FRAGMENT, the test kernel's fragments, the tip's selftest
        config, and =y for each base symbol a Kconfig line of the series
        selects (so the patch adding the select changes no config)."""
        parts = [BASE_FRAGMENT] + [p.read_text() for p in qemu.fragments(self.ws, self.ws.tree)]
        diff = git(self.src, "diff", "-U0", base["tree"], tip["tree"], "--", "*Kconfig*")
        for sym in sorted(set(re.findall(r"^\+\s*(?:select|imply)\s+(\w+)", diff, re.M))):
            if subprocess.run(["git", "-C", self.src, "grep", "-qE", r"^\s*(menu)?config\s+%s\s*$"
                               % sym, base["tree"], "--", "*Kconfig*"]).returncode == 0:
                parts.append("CONFIG_%s=y\n" % sym)
        return "\n".join(parts)

    def base_config(self, base, frag):
        """allnoconfig of the base with the main fragment: olddefconfig of
        each state then gives the symbols the series adds their defaults."""
        path = self.g / ("base-%s.config" % sha(self.key0, base["tree"], frag))
        if not path.exists():
            self.checkout(base["commit"])
            odir = self.o / "config"
            odir.mkdir(parents=True, exist_ok=True)
            (odir / "frag.config").write_text(frag)
            rc, out = self.make(odir, "KCONFIG_ALLCONFIG=%s" % (odir / "frag.config"),
                                "allnoconfig")
            if rc:
                raise StageError("allnoconfig at the base failed: %s" % first_errors(out)[0])
            path.write_text((odir / ".config").read_text())
        return path.read_text()

    def configure(self, odir, text):
        """odir/.config of the checked-out state: text through olddefconfig.
        Not run again (7 s) while .config is what the same inputs gave: the
        text, the state's Kconfig inputs, the linker and tools."""
        listing = git(self.src, "ls-tree", "-r", self.head)
        kin = sha(*(ln for ln in listing.splitlines() if re.search(
            r"\t(Makefile|scripts/.*|arch/[^/]+/Makefile|.*Kconfig[^/]*)$", ln)))
        cfg, stamp = odir / ".config", odir / ".config.gates"
        key = sha(self.key0, text, kin, odir.name)
        if cfg.exists() and stamp.exists() and stamp.read_text() == sha(key, cfg.read_bytes()):
            return cfg.read_text()
        odir.mkdir(parents=True, exist_ok=True)
        cfg.write_text(text)
        rc, out = self.make(odir, "olddefconfig")
        if rc:
            raise StageError("olddefconfig failed in %s: %s" % (odir, first_errors(out)[0]))
        stamp.write_text(sha(key, cfg.read_bytes()))
        return cfg.read_text()

    def members(self, odir):
        """The objects of the current vmlinux (its thin archives)."""
        objs = set()
        for a in ("vmlinux.a", "lib/lib.a", "arch/x86/lib/lib.a"):
            if (odir / a).exists():
                out = subprocess.run(["ar", "t", a], cwd=odir, capture_output=True, text=True).stdout
                objs.update(Path(os.path.normpath(odir / ln.strip())) for ln in out.splitlines())
        return objs

    def objects_of(self, files, odir):
        """The built objects of the C files among files (.cmd in odir)."""
        objs = [f[:-2] + ".o" for f in sorted(files)
                if f.endswith(".c") and not f.startswith(NO_OBJECTS)]
        return [o for o in objs if (odir / os.path.dirname(o) / (".%s.cmd" % Path(o).name)).exists()]

    def sparse_targets(self, files, odir):
        """The built objects of the touched C files, and for a touched
        header those of the C files in its directory."""
        cs = set(f for f in files if f.endswith(".c"))
        for h in (f for f in files if f.endswith(".h") and not f.startswith(NO_OBJECTS)):
            d = odir / os.path.dirname(h)
            if d.is_dir():
                cs.update(os.path.join(os.path.dirname(h), m.group(1) + ".c")
                          for m in map(re.compile(r"^\.(.*)\.o\.cmd$").match, os.listdir(d)) if m)
        return [o for o in self.objects_of(cs, odir) if (self.src / (o[:-2] + ".c")).exists()]

    def sparse(self, odir, objs):
        """{C file: sparse's findings} of objs, at the checked-out state."""
        if not objs:
            return {"ok": True, "files": {}}
        rc, out = self.make(odir, "C=2", "CHECK=%s sparse" % SPARSEWRAP, *objs)
        if rc:
            return {"ok": False, "detail": first_errors(out), "transient": True}
        per = {o[:-2] + ".c": [] for o in objs}
        mine = "\n".join(ln[8:] for ln in out.splitlines() if ln.startswith("sparse| "))
        for w in map(norm, diag_lines(mine)):
            per.setdefault(w.split(":", 1)[0], []).append(w)
        return {"ok": True, "files": per}

    def build(self, st, cfg, frag, prev=None, targets=None, share=False):
        """Build st in config cfg (vmlinux, targets, or with share nothing: an
        equal state's build is its); with prev, sparse on what st changed."""
        odir = self.o / ODIRS.get(cfg, "main")

        def go():
            self.checkout(st["commit"])
            config = self.configure(odir, self.base_cfg + "\n" + frag + MATRIX[cfg])
            sym, want = EXPECT.get(cfg, (None, None))
            if sym and config_value(config, sym) != want:
                return {"ok": False, "detail": ["%s is %s in .config, wanted %s" % (
                    sym, config_value(config, sym), want or "unset")]}
            res = {"ok": True}
            if not share:
                rc, out = self.make(odir, *(targets or ["vmlinux"]))
                if rc:      # a failed build is not kept: its cause may be outside the inputs
                    return {"ok": False, "detail": first_errors(out), "transient": True}
                objs = {odir / t for t in targets} if targets else self.members(odir)
                res["warnings"] = state_warnings(odir, out, objs)
            if prev is not None:
                res["sparse"] = self.sparse(odir, self.sparse_targets(self.changed(prev, st), odir))
                res["transient"] = res["sparse"].pop("transient", False)
            return res
        return self.cached(["build", cfg, frag, st["tree"], prev and prev["tree"], targets, share], go)

    def base_run(self, base, frag, objs, sparse_files):
        """The base's warnings of objs only (one it does not build: new), and sparse."""
        odir = self.o / "main"

        def go():
            self.checkout(base["commit"])
            self.configure(odir, self.base_cfg + "\n" + frag)
            for o in objs:
                for f in (odir / o, odir / (o + ".warn")):
                    f.unlink(missing_ok=True)
            out = self.make(odir, "-k", *objs)[1] if objs else ""
            made = {odir / o for o in objs if (odir / o).exists()}
            warns = state_warnings(odir, "", made)
            sp = self.sparse(odir, self.sparse_targets(sparse_files, odir))
            if not sp["ok"]:
                raise StageError("sparse fails at the base: %s" % sp["detail"][:1])
            if not sp["files"]:
                raise StageError("the sparse baseline found no built object of %s"
                                 % " ".join(sparse_files[:3]))
            return {"warnings": sorted(warns), "sparse": sp["files"], "log": out[-200:]}
        return self.cached(["base", frag, base["tree"], sorted(objs), sparse_files], go)

    def checkpatch(self, commit):
        patch = prep.format_patch(self.ws.tree, "-1", "--stdout", commit)
        scripts = git(self.ws.tree, "rev-parse", "HEAD:scripts", "HEAD:LICENSES")

        def go():
            # spdxcheck.py runs with the python3 of PATH: Debian's has ply and git
            r = W.run(["perl", "scripts/checkpatch.pl", "--strict", "--codespell",
                       "--codespellfile", DICT, "--color=never", "--ignore", CHECKPATCH_IGNORE,
                       "-"], cwd=self.ws.tree, input=patch, capture=True, check=False,
                      env={"PATH": "/usr/bin:" + os.environ.get("PATH", "")})
            return checkpatch_verdict(r.returncode, r.stdout + r.stderr)
        return self.cached(["checkpatch", patch, scripts, Path(DICT).read_bytes()], go)

    def kdoc(self, prev, st):
        """kernel-doc -none of the touched .c/.h files: st's warnings prev had not."""
        files = [f for f in self.changed(prev, st) if f.endswith((".c", ".h"))]

        def warnings(state):
            with tempfile.TemporaryDirectory(dir=self.g) as tmp:
                present = []
                for p in files:
                    text = self.blob(state, p)
                    if text is not None:
                        (Path(tmp) / p).parent.mkdir(parents=True, exist_ok=True)
                        (Path(tmp) / p).write_text(text)
                        present.append(p)
                if not present:
                    return set()
                r = W.run(["perl", self.ws.tree / "scripts/kernel-doc", "-none", *present], cwd=tmp,
                          capture=True, check=False, label="kernel-doc")
                return set(map(norm, diag_lines(r.stdout + r.stderr)))
        return new_in(warnings(st) - warnings(prev)) if files else {"ok": True}

    # -- the run
    def run(self, st_out):
        t = self.ws.tree
        base_c = prep.base_commit(t)
        if not base_c:
            raise StageError("%s has no tag 'base' (make prep)" % t)
        commits = prep.patches(t)
        if not commits:
            st_out.verdict, st_out.summary = "skip", "no patches"
            return {}
        self.clone()
        states = [{"n": i, "commit": c, "tree": git(self.src, "rev-parse", c + "^{tree}")}
                  for i, c in enumerate([base_c] + commits)]
        base, tip = states[0], states[-1]
        frag = self.fragment(base, tip)
        self.base_cfg = self.base_config(base, frag)
        n = len(commits)
        built, later = {}, None
        for st in reversed(states[1:]):   # the tip first, then back to patch 1
            prev = states[st["n"] - 1]
            if later and not self.kernel_reads(self.changed(st, later)):
                print("  build of patch %d/%d: no kernel build reads what differs from "
                      "patch %d: its build" % (st["n"], n, later["n"]), flush=True)
                b = built[later["n"]]
                built[st["n"]] = dict(b, sparse=self.build(st, "main", frag, prev, share=True)[
                    "sparse"]) if b["ok"] else b
                continue
            print("  build of patch %d/%d" % (st["n"], n), flush=True)
            built[st["n"]] = self.build(st, "main", frag, prev=prev)
            later = st
        touched = self.changed(base, tip)
        matrix = {}
        for cfg in MATRIX_GATES:
            targets = None
            if cfg == "kunit-test=y" or (cfg == "sysctl=n" and not self.whole):
                targets = self.objects_of(touched, self.o / "main")
                if not targets:
                    matrix[cfg] = {"ok": True, "none": True}
                    continue
            print("  tip: build %s%s" % (cfg, " of " + " ".join(targets) if targets else ""),
                  flush=True)
            matrix[cfg] = self.build(tip, cfg, frag, targets=targets)
        warned, whole = set(), False
        for b in list(built.values()) + list(matrix.values()):
            for w, objs in b.get("warnings", {}).items():
                warned.update(o for o in objs if o != "(make)")
                whole |= "(make)" in objs
        base_files = set(git(self.src, "ls-tree", "-r", "--name-only", base["tree"]).split())
        sparse_files = sorted(f for f in base_files if f.endswith(".c") and (
            f.startswith("security/") or f in touched) and not f.startswith(NO_OBJECTS))
        print("  base: warnings of the %d object(s) that warn in the series, sparse "
              "baseline" % len(warned), flush=True)
        b0 = self.base_run(base, frag, sorted(warned), sparse_files)
        base_warn = set(b0["warnings"])
        if whole:
            print("  base: built whole (make printed a warning of its own)", flush=True)
            bw = self.build(base, "base-whole", frag)
            if not bw["ok"]:
                raise StageError("the base does not build: %s" % bw["detail"][:1])
            base_warn |= set(bw["warnings"])
        rows = [{"n": st["n"], "checkpatch": self.checkpatch(st["commit"]),
                 "kdoc": self.kdoc(states[st["n"] - 1], st), "build": built[st["n"]],
                 "sparse": built[st["n"]].get("sparse", {})} for st in states[1:]]
        rst = sorted({f for f in touched if f.endswith(".rst")} |
                     {"Documentation/admin-guide/LSM/Yama.rst"})
        rst_res = rst_check({p: self.blob(tip, p) for p in rst if self.blob(tip, p) is not None})
        return judge(rows, base_warn, b0["sparse"], matrix, rst_res, touched)


def table(cells):
    gates = PATCH_GATES + [g for g in MATRIX_GATES + ["rst"] if g in cells.get("tip", {})]
    lines = ["%-12s %s" % ("", " ".join("%-12s" % g for g in gates))]
    lines += ["%-12s %s" % (r, " ".join("%-12s" % cs.get(g, {"status": ""})["status"]
                                        for g in gates)) for r, cs in cells.items()]
    for r, g, c in ((r, g, c) for r, cs in cells.items() for g, c in cs.items()):
        if c["status"] == "FAIL":
            lines += ["  %s / %s:" % (r, g)] + ["    " + d for d in c["detail"][:8]]
    return "\n".join(lines)


def stage(ws, args):
    # the SYSCTL=n tip built whole (make check-debug) publishes a result of its own
    name = "series-check-sysctl-whole" if args.sysctl_whole else "series-check"
    with Stage(ws, name) as st:
        if st.dirty:
            raise StageError("%s has uncommitted edits: series-check judges commits; "
                             "commit (or stash) them first" % ws.tree)
        cells = Gates(ws, whole=args.sysctl_whole).run(st)
        if cells:
            print(table(cells), flush=True)
            flat = [(r, g, c) for r, cs in cells.items() for g, c in cs.items()]
            st.passed = sum(c["status"] == "pass" for _, _, c in flat)
            st.failed = sum(c["status"] == "FAIL" for _, _, c in flat)
            st.skipped = sum(c["status"] == "-" for _, _, c in flat)
            st.details = {"cells": cells, "sysctl_n": "whole" if args.sysctl_whole else "objects",
                          "failed_cases": [{"name": "%s %s" % (r, g), "reason": "; ".join(
                              c["detail"][:3]) or "failed"} for r, g, c in flat
                              if c["status"] == "FAIL"]}
            st.summary = "%d patches, %d cells" % (
                len(cells) - ("tip" in cells), len(flat))
    return st.exit_code


def add_arguments(p):
    p.add_argument("--sysctl-whole", action="store_true",
                   help="build and link the SYSCTL=n tip whole with GNU ld (check-debug), "
                        "not only the series' objects")


COMMANDS = {"series-check": ("per-patch gates: checkpatch, W=1 + sparse build, kernel-doc; "
                             "tip config matrix", add_arguments, stage)}
