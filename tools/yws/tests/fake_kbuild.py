"""A stand-in for the kernel's make (and so gcc and sparse), for the gates'
engine tests: `make -C SRC O=ODIR ... TARGETS` as series_check.Gates runs it.

It imitates kbuild just enough for the gates' decisions, on a tree of a
few .c and .h files:
  allnoconfig, olddefconfig  ODIR/.config: the given lines (the last
      assignment of a symbol wins), of the symbols the tree's Kconfig files
      define only.
  vmlinux, DIR/NAME.o  "compile" each .c of the tree (vmlinux) or the named
      ones: an object is remade when it is missing or its source or a
      header its .cmd names changed; a header that no longer exists does
      not remake it (what forget_deleted_headers is there for). A compile
      writes ODIR/DIR/NAME.o, ODIR/DIR/.NAME.o.cmd naming the source and
      the headers it includes, and NAME.o.warn as cc-wrap does.
      vmlinux then links: ODIR/vmlinux.a (ar rcT of the objects) and
      ODIR/vmlinux.
  C=2  sparse on the targets' sources: "sparse| " lines on stderr.
What the "compiler" reads in a source (comments are markers):
  #include <linux/x.h>, "x.h"   include/linux/x.h, or next to the source;
                                a missing one is a fatal error
  an UPPER_CASE name in code     must be #defined in the source or a header
                                it includes, else an error
  /* WARN_ME text */             warning: text
  /* SPARSE_ME text */           a sparse warning: text
Each run appends a JSON line to $FAKE_KBUILD_LOG: the commit checked out
in SRC, the O= folder's name, the targets, C=, whether .config has Yama
(the main config, not the yama=n one) and the objects compiled.
"""
import hashlib
import json
import os
import re
import sys
from pathlib import Path

NO_OBJECTS = ("tools/", "scripts/", "Documentation/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)", re.M)
MACRO_USE = re.compile(r"\b[A-Z][A-Z0-9_]+\b")
COMMENT = re.compile(r"/\*(.*?)\*/")


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Kbuild:
    def __init__(self, src, odir):
        self.src, self.odir = src, odir
        self.compiled, self.failed = [], []

    def shown(self, rel):
        """A source path as gcc prints it in an O= build."""
        return os.path.relpath(self.src / rel, self.odir)

    # -- kconfig
    def files(self):
        """The tree's files, relative to it (not .git/)."""
        for d, dirs, names in os.walk(self.src):
            dirs[:] = [n for n in dirs if n != ".git"]
            yield from (os.path.relpath(os.path.join(d, n), self.src) for n in names)

    def symbols(self):
        known = set()
        for k in (self.src / f for f in self.files() if os.path.basename(f).startswith("Kconfig")):
            known.update(re.findall(r"^\s*(?:menu)?config\s+(\w+)", k.read_text(), re.M))
        return known

    def config(self, text):
        values = {}
        for ln in text.splitlines():
            m = re.match(r"^(CONFIG_\w+)=(.*)$", ln) or re.match(r"^# (CONFIG_\w+) is not set$", ln)
            if m:
                values[m.group(1)] = m.group(2) if m.re.groups == 2 else None
        known = self.symbols()
        lines = [("%s=%s" % (s, v) if v is not None else "# %s is not set" % s)
                 for s, v in sorted(values.items()) if s[len("CONFIG_"):] in known]
        (self.odir / ".config").write_text("".join(ln + "\n" for ln in lines))

    # -- the compiler
    def resolve(self, rel, name, quoted):
        path = os.path.normpath(os.path.join(os.path.dirname(rel), name)) if quoted \
            else "include/" + name
        return path if (self.src / path).is_file() else None

    def read(self, rel, seen, errors):
        """Headers rel includes (recursively) and the macros defined there."""
        text = (self.src / rel).read_text()
        defined = set(DEFINE.findall(text))
        for n, ln in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(ln)
            if not m:
                continue
            path = self.resolve(rel, m.group(2), m.group(1) == '"')
            if path is None:
                errors.append("%s:%d:10: fatal error: %s: No such file or directory"
                              % (self.shown(rel), n, m.group(2)))
            elif path not in seen:
                seen.append(path)
                defined |= self.read(path, seen, errors)
        return defined

    def diagnose(self, rel):
        """(headers, warnings, errors) of compiling rel: the markers of the
        module's docstring."""
        headers, errors, warnings = [], [], []
        defined = self.read(rel, headers, errors)
        for n, ln in enumerate((self.src / rel).read_text().splitlines(), 1):
            for note in COMMENT.findall(ln):
                if note.strip().startswith("WARN_ME "):
                    warnings.append("%s:%d:5: warning: %s" % (
                        self.shown(rel), n, note.strip()[len("WARN_ME "):]))
            code = COMMENT.sub("", ln)
            if code.lstrip().startswith("#"):
                continue
            for name in MACRO_USE.findall(code):
                if name not in defined:
                    errors.append("%s:%d:%d: error: '%s' undeclared here (not in a function)"
                                  % (self.shown(rel), n, code.index(name) + 1, name))
        return headers, warnings, errors

    def paths(self, rel):
        obj = self.odir / (rel[:-2] + ".o")
        return obj, obj.with_name("." + obj.name + ".cmd"), Path(str(obj) + ".warn")

    def up_to_date(self, rel):
        """The object exists, and its source and every header it read that
        still exists are as they were (an object records their digests)."""
        obj = self.paths(rel)[0]
        if not obj.exists():
            return False
        made = json.loads(obj.read_text())
        return all(digest(self.src / f) == h for f, h in made.items() if (self.src / f).exists())

    def compile(self, rel):
        if self.up_to_date(rel):
            return
        obj, cmd, warn = self.paths(rel)
        obj.parent.mkdir(parents=True, exist_ok=True)
        headers, warnings, errors = self.diagnose(rel)
        print("  CC      %s" % obj.relative_to(self.odir))
        for ln in warnings + errors:
            print(ln, file=sys.stderr)
        if warnings or errors:          # cc-wrap keeps the compiler's lines
            warn.write_text("".join(ln + "\n" for ln in warnings + errors))
        else:
            warn.unlink(missing_ok=True)
        self.compiled.append(str(obj.relative_to(self.odir)))
        if errors:
            obj.unlink(missing_ok=True)
            self.failed.append(obj)
            print("make[3]: *** [scripts/Makefile.build:229: %s] Error 1"
                  % obj.relative_to(self.odir), file=sys.stderr)
            return
        deps = [rel] + headers
        cmd.write_text("savedcmd_%s := gcc -c -o %s %s\n" % (
            obj.relative_to(self.odir), obj.relative_to(self.odir), self.shown(rel)) +
            "deps_%s := \\\n" % obj.relative_to(self.odir) +
            "".join("  %s \\\n" % self.shown(d) for d in deps))
        obj.write_text(json.dumps({d: digest(self.src / d) for d in deps}))

    def sources(self):
        return sorted(f for f in self.files() if f.endswith(".c") and not f.startswith(NO_OBJECTS))

    def link(self, objs):
        (self.odir / "vmlinux.a").unlink(missing_ok=True)
        os.chdir(self.odir)     # os.spawnvp, not subprocess: this runs ~400 times a test file
        if os.spawnvp(os.P_WAIT, "ar", ["ar", "rcT", "vmlinux.a", *objs]):
            raise SystemExit("ar failed")
        (self.odir / "vmlinux").write_text("\n".join(objs))
        print("  LD      vmlinux")

    def sparse(self, rel):
        print("  CHECK   %s" % self.shown(rel))
        for n, ln in enumerate((self.src / rel).read_text().splitlines(), 1):
            for note in COMMENT.findall(ln):
                if note.strip().startswith("SPARSE_ME "):
                    print("sparse| %s:%d:1: warning: %s" % (
                        self.shown(rel), n, note.strip()[len("SPARSE_ME "):]), file=sys.stderr)


def main(argv):
    src, targets, var = None, [], {}
    args = iter(argv)
    for a in args:
        if a == "-C":
            src = Path(next(args)).resolve()
        elif a.startswith("-"):
            continue                    # -jN, -k: every target is tried, as under -j
        elif "=" in a:
            var.setdefault(*a.split("=", 1))
        else:
            targets.append(a)
    odir = Path(var["O"]).resolve()
    odir.mkdir(parents=True, exist_ok=True)
    kb = Kbuild(src, odir)
    head = (src / ".git/HEAD").read_text().strip()      # gates checks out --detach
    rc = 0
    try:
        for t in targets:
            if t == "allnoconfig":
                kb.config(Path(var["KCONFIG_ALLCONFIG"]).read_text())
            elif t == "olddefconfig":
                kb.config((odir / ".config").read_text())
            elif t == "vmlinux":
                for rel in kb.sources():
                    kb.compile(rel)
                if not kb.failed:
                    kb.link([str(kb.paths(rel)[0].relative_to(odir)) for rel in kb.sources()])
            elif t.endswith(".o") and (src / (t[:-2] + ".c")).is_file():
                kb.compile(t[:-2] + ".c")
                if var.get("C") == "2":
                    kb.sparse(t[:-2] + ".c")
            else:
                print("make[1]: *** No rule to make target '%s'.  Stop." % t, file=sys.stderr)
                rc = 2
        if kb.failed:
            print("make: *** [Makefile:1943: vmlinux] Error 2", file=sys.stderr)
            rc = 2
    finally:
        cfg = odir / ".config"
        yama = cfg.exists() and "CONFIG_SECURITY_YAMA=y" in cfg.read_text().splitlines()
        with open(os.environ["FAKE_KBUILD_LOG"], "a") as log:
            log.write(json.dumps({"head": head, "odir": odir.name, "targets": targets,
                                  "C": var.get("C"), "yama": yama,
                                  "compiled": kb.compiled}) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
