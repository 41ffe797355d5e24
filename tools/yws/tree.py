"""The kernel tree: Debian packages, the base, series/ in and out.

build/linux is the developer's tree and the b4 prep branch: the base commit
(tag "base", fixed identity, id recorded in tools/bases/<base>.toml), b4's
cover commit, then the series. series/ is the repository's record of the
series; `export` writes it from the tree, `round-trip` proves it exact.
"""
import hashlib
import shutil
import subprocess
import tomllib
from pathlib import Path

from . import b4prep
from . import ws as W
from .ws import Stage, StageError, git, run

PACKAGES = """gcc make flex bison bc libelf-dev libssl-dev dwarves cpio xz-utils
    python3 python3-pytest python3-docutils python3-ply python3-git perl
    qemu-system-x86 qemu-utils busybox-static libc6-dev rsync b4 git
    git-filter-repo codespell sparse ccache lz4 lld hyperfine""".split()
CACHE = Path.home() / ".cache" / "yama-workspace"
SYNCED = "yws-synced"      # in the tree's .git: hash of series/ when the tree last matched it
FORMAT = ["-c", "core.quotePath=true", "-c", "diff.noprefix=false",
          "-c", "diff.mnemonicPrefix=false", "-c", "diff.renames=true",
          "-c", "diff.algorithm=myers", "-c", "format.signature=",
          "-c", "format.headers=", "-c", "format.coverLetter=false"]


def base_info(ws):
    """tools/bases/<base>.toml with the derived tarball path and top folder."""
    conf = ws.root / "tools" / "bases" / (ws.base + ".toml")
    if not conf.exists():
        raise StageError("unknown base %r (no %s)" % (ws.base, conf))
    b = tomllib.loads(conf.read_text())
    up = b["version"].split(":")[-1].split("-")[0]
    b["tarball"] = ws.build / "base" / ("%s_%s.orig.tar.xz" % (b["package"], up))
    b["dsc"] = ws.build / "base" / ("%s_%s.dsc" % (
        b["package"], b["version"].split(":")[-1]))
    b["topdir"] = "%s-%s" % (b["package"], up)
    b["conf"] = conf
    return b


def missing_packages(packages=PACKAGES):
    res = subprocess.run(["dpkg-query", "-W", "-f", "${db:Status-Abbrev} ${Package}\n",
                          *packages], capture_output=True, text=True)
    have = {ln.split()[1] for ln in res.stdout.splitlines()
            if ln.startswith("ii") and len(ln.split()) > 1}
    return [p for p in packages if p not in have]


def deps(ws):
    """Install the missing Debian packages, then fetch the base."""
    missing = missing_packages()
    if missing:
        print("deps: missing: " + " ".join(missing))
        if subprocess.run(["id", "-u"], capture_output=True,
                          text=True).stdout.strip() != "0":
            raise StageError("not root; run: apt-get install " + " ".join(missing))
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], env=env, label="apt-get update")
        run(["apt-get", "install", "-y", "-qq", "--no-install-recommends",
             *missing], env=env, label="apt-get install")
    fetch_base(ws)


def _dsc_sha256(dsc, name):
    on = False
    for line in Path(dsc).read_text().splitlines():
        if line.startswith("Checksums-Sha256:"):
            on = True
        elif on and line.startswith(" ") and line.split()[2:] == [name]:
            return line.split()[0]
        elif not line.startswith(" "):
            on = False
    return None


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified(b):
    """True when the tarball is there and has the .dsc's SHA-256."""
    return (b["tarball"].exists() and b["dsc"].exists() and
            _dsc_sha256(b["dsc"], b["tarball"].name) == _sha256(b["tarball"]))


def fetch_base(ws):
    """apt-get source --download-only through the workspace's own apt
    configuration (a deb-src entry for the archive the machine already uses
    for the base's suite); the machine's apt sources are only read."""
    b = base_info(ws)
    if verified(b):
        return b
    apt = ws.dir("apt")
    for d in ("lists/partial", "cache/archives/partial", "sources.list.d"):
        (apt / d).mkdir(parents=True, exist_ok=True)
    targets = run(["apt-get", "indextargets", "--format",
                   "$(REPO_URI) $(RELEASE)", "Created-By: Packages"],
                  capture=True, check=False).stdout.split("\n")
    uri = next((t.split()[0] for t in targets
                if t.split()[1:] == [b["suite"]]), None)
    if not uri:
        raise StageError("the machine's apt sources have no %s archive to "
                         "take %s from" % (b["suite"], b["package"]))
    (apt / "sources.list").write_text(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "%s %s main\n" % (uri, b["suite"]))
    (apt / "apt.conf").write_text("".join(
        'Dir::%s "%s";\n' % kv for kv in (
            ("Etc::SourceList", apt / "sources.list"),
            ("Etc::SourceParts", apt / "sources.list.d"),
            ("State::Lists", apt / "lists"), ("Cache", apt / "cache"))) +
        'APT::Sandbox::User "root";\n')
    env = {"APT_CONFIG": apt / "apt.conf"}
    print("  apt-get source %s=%s from %s (%s), apt configuration %s" % (
        b["package"], b["version"], uri, b["suite"], apt / "apt.conf"))
    run(["apt-get", "-qq", "update"], env=env, label="apt-get update")
    dest = b["tarball"].parent
    dest.mkdir(parents=True, exist_ok=True)
    tmp = dest / ".fetch"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        run(["apt-get", "-qq", "source", "--download-only",
             "%s=%s" % (b["package"], b["version"])], cwd=tmp, env=env,
            label="apt-get source")
        for f in (b["dsc"], b["tarball"]):
            (tmp / f.name).replace(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not verified(b):
        b["tarball"].unlink()
        raise StageError("%s does not match the SHA-256 in %s" % (
            b["tarball"].name, b["dsc"].name))
    print("  %s: SHA-256 as in %s" % (b["tarball"].name, b["dsc"].name))
    return b


def _init(tree):
    for k, v in (("core.autocrlf", "false"), ("core.fileMode", "true"),
                 ("gc.auto", "0")):
        git(tree, "config", k, v)


def _extract(b, dest):
    """Extract the tarball into DEST and commit it as the base."""
    tmp = dest.parent / (dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    print("  extracting %s" % b["tarball"].name, flush=True)
    run(["tar", "-xf", b["tarball"], "-C", tmp], label="tar")
    if not (tmp / b["topdir"]).is_dir():
        raise StageError("%s has no %s/" % (b["tarball"].name, b["topdir"]))
    (tmp / b["topdir"]).rename(dest)
    tmp.rmdir()
    print("  committing the base", flush=True)
    git(dest, "init", "-q", "-b", "base-import")
    _init(dest)
    run(["git", "-C", dest, "add", "-f", "-A"], label="git add")  # .gitignore ends with /*
    name, mail = b["identity"].rsplit(" <", 1)
    who = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": mail.rstrip(">"),
           "GIT_AUTHOR_DATE": b["date"], "GIT_COMMITTER_DATE": b["date"],
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": mail.rstrip(">")}
    run(["git", "-C", dest, "commit", "-q", "--no-verify", "--no-gpg-sign",
         "-m", "%s: pristine tree" % b["package"], "-m",
         "Imported from %s." % b["tarball"].name], env=who, label="git commit")
    git(dest, "tag", "base")


def base_tree(ws, dest):
    """A new git tree at the base commit in DEST. The extracted base is
    kept in a bare repository under ~/.cache (an extraction and commit
    cost minutes); only a cached base whose commit is the recorded id is
    taken, so a stale cache cannot change what is tested."""
    b = fetch_base(ws)
    dest = Path(dest)
    shutil.rmtree(dest, ignore_errors=True)
    cache = next((c for c in sorted(CACHE.glob(ws.base + "-*.git"))
                  if base_commit(c) == b["id"]), None)
    if cache:
        print("  the base from %s" % cache)
        run(["git", "clone", "-q", "--no-checkout", cache, dest], label="git clone")
        git(dest, "remote", "remove", "origin")
        _init(dest)
        git(dest, "checkout", "-q", "-B", "base-import", "base")
    else:
        _extract(b, dest)
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = CACHE / (".tmp-%s" % b["id"][:12])
        shutil.rmtree(tmp, ignore_errors=True)
        if run(["git", "clone", "-q", "--bare", "--no-tags", dest, tmp],
               check=False, capture=True).returncode == 0:
            git(tmp, "fetch", "-q", dest, "refs/tags/base:refs/tags/base")
            tmp.rename(CACHE / ("%s-%s.git" % (ws.base, b["id"][:12])))
    got = base_commit(dest)
    if got != b["id"]:
        raise StageError("base commit %s of %s %s is not the recorded %s (%s)"
                         % (got, b["package"], b["version"], b["id"], b["conf"].name))
    return got


def base_commit(tree):
    return git(tree, "rev-parse", "-q", "--verify", "refs/tags/base^{commit}",
               check=False) or None


def cover_commit(tree):
    return b4prep.cover_commit(tree)   # at call time: b4prep imports mail imports tree


def patches(tree):
    """The series' commits in order (base..HEAD without the cover commit)."""
    start = cover_commit(tree) or base_commit(tree)
    return git(tree, "rev-list", "--reverse", "%s..HEAD" % start).split()


def series_files(ws):
    """series/'s patch files in the order of series/series."""
    try:
        lines = (ws.series / "series").read_text().splitlines()
    except FileNotFoundError:
        return []
    return [ws.series / ln.strip() for ln in lines
            if ln.strip() and not ln.strip().startswith("#")]


def apply_series(ws, tree):
    """git am series/ onto HEAD; names the patch and files that fail."""
    for i, p in enumerate(series_files(ws)):
        if not p.exists():
            raise StageError("series/series names %s, which does not exist" % p.name)
        res = subprocess.run(["git", "-C", str(tree), "am", "-q",
                              "--committer-date-is-author-date", str(p)],
                             env=dict(W.os.environ, **W.COMMITTER),
                             capture_output=True, text=True)
        if res.returncode:
            git(tree, "am", "--abort", check=False)
            where = [ln.split(": ", 2)[-1] for ln in res.stderr.splitlines()
                     if ln.startswith("error:")][:3]
            raise StageError("patch %s does not apply (%s); tree left at the "
                             "last good patch (%d applied)" % (
                                 p.name, "; ".join(where) or "git am failed", i))
        print("  applied " + p.name, flush=True)
    return len(series_files(ws))


def series_hash(folder):
    """One hash of a series folder: its order and every patch's bytes."""
    h = hashlib.sha1()
    for p in sorted(Path(folder).glob("*.patch")) + [Path(folder) / "series"]:
        h.update(p.name.encode() + b"\0" + (p.read_bytes() if p.exists() else b""))
    return h.hexdigest()


def _synced(ws):
    """The series/ hash the tree last matched (its commits exported to it)."""
    f = ws.tree / ".git" / SYNCED
    return f.read_text().strip() if f.exists() else None


def _mark_synced(ws):
    (ws.tree / ".git" / SYNCED).write_text(series_hash(ws.series) + "\n")


def format_patch(tree, *args):
    """git format-patch with fixed settings (no user or system git config),
    so that its output depends only on the commits: the one way the
    workspace turns commits into patches."""
    return run(["git", "-C", tree, *FORMAT, "format-patch", "--no-signature",
                "--full-index", "--no-color", *args],
               env={"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"},
               capture=True, label="git format-patch").stdout


def export_to(ws, dest, rev="HEAD"):
    """Write the patches of the tree's series up to REV and their order into DEST."""
    tree = ws.tree
    if git(tree, "rev-list", "--merges", "%s..%s" % (base_commit(tree), rev)):
        raise StageError("the series has merge commits; rebase it to a line")
    start = cover_commit(tree) or base_commit(tree)
    dest.mkdir(parents=True, exist_ok=True)
    format_patch(tree, "-q", "--zero-commit", "--no-numbered", "--no-cover-letter",
                 "--no-thread", "--no-base", "-o", dest, "%s..%s" % (start, rev))
    names = sorted(p.name for p in dest.glob("*.patch"))
    (dest / "series").write_text(
        "# Order in which make tree applies these patches (git am).\n" +
        "".join(n + "\n" for n in names))


def export_differs(ws, rev="HEAD"):
    """The files of series/ that an export of REV would change."""
    tmp = ws.dir("export")
    shutil.rmtree(tmp)
    export_to(ws, tmp, rev)
    names = {p.name for p in tmp.iterdir()} | {p.name for p in ws.series.glob("*.patch")}
    names.add("series")
    return sorted(n for n in names if not (ws.series / n).exists() or
                  not (tmp / n).exists() or
                  (ws.series / n).read_bytes() != (tmp / n).read_bytes())


def _reuse_or_reset(ws, force):
    """Keep the tree when its commits are series/ (uncommitted edits are
    the developer's work in progress: kept, and tested as they are). When
    series/ changed (a pull), take it if the tree's commits are still what
    series/ was when they last matched (nothing to lose), or FORCE."""
    differ = export_differs(ws)
    if not differ:
        return True
    dirty = git(ws.tree, "status", "--porcelain", "--untracked-files=no")
    if not force and (dirty or series_hash(ws.dir("export")) != _synced(ws)):
        raise StageError(
            "series/ and %s differ (%s) and the tree has work that is not in "
            "series/: commit it and make export, or FORCE=1 to take series/ "
            "and lose it" % (ws.tree, "uncommitted edits" if dirty
                             else ", ".join(differ[:4])))
    git(ws.tree, "am", "--abort", check=False)
    git(ws.tree, "reset", "-q", "--hard", cover_commit(ws.tree) or "base")
    print("  series/ changed: applying it again", flush=True)
    return False


def stage_tree(ws, args):
    with Stage(ws, "tree", "base %s + series/ -> %s" % (ws.base, ws.tree),
               tree=None) as st:
        if (ws.tree / ".git").exists() and base_commit(ws.tree):
            kept = _reuse_or_reset(ws, args.force)
        else:
            if ws.tree.exists() and any(ws.tree.iterdir()) and not args.force:
                raise StageError("%s exists and is no tree of this workspace (no tag "
                                 "base): move it away, or FORCE=1 to replace it" % ws.tree)
            base_tree(ws, ws.tree)
            b4prep.start(ws, ws.tree)
            if not git(ws.tree, "symbolic-ref", "-q", "HEAD", check=False):
                git(ws.tree, "checkout", "-q", "-B", "b4/yama-lsm")
            kept = False
        n = len(patches(ws.tree)) if kept else apply_series(ws, ws.tree)
        head = git(ws.tree, "rev-parse", "HEAD")
        _mark_synced(ws)
        st.tree_id, st.dirty = W.tree_state(ws.tree)
        st.passed = n + 1
        st.summary = "%s: tip %s, %d patches on base %s" % (
            "kept" if kept else "applied", head[:12], n, base_commit(ws.tree)[:12])
    return st.exit_code


def stage_export(ws, args):
    with Stage(ws, "export", "the tree's commits -> series/") as st:
        if git(ws.tree, "status", "--porcelain", "--untracked-files=no"):
            raise StageError("%s has uncommitted edits: commit them first" % ws.tree)
        tmp = ws.dir("export")
        shutil.rmtree(tmp)
        export_to(ws, tmp)
        ws.series.mkdir(exist_ok=True)
        for p in ws.series.glob("*.patch"):
            p.unlink()
        for p in tmp.iterdir():
            shutil.copy2(p, ws.series / p.name)
        _mark_synced(ws)
        st.passed = len(series_files(ws))
        st.summary = "%d patches written to series/" % st.passed
    return st.exit_code


def stage_round_trip(ws, args):
    with Stage(ws, "round-trip", "series/ = make export of the tree's commits") as st:
        differ = export_differs(ws)
        if differ:
            raise StageError("series/ is not what make export writes (%s): "
                             "make export, or make tree FORCE=1" % ", ".join(differ[:4]))
        st.passed = 1
        st.summary = "the %d patches and their order, byte for byte" % len(series_files(ws))
    return st.exit_code


def stage_clean(ws, args):
    if (ws.tree / ".git").exists() and base_commit(ws.tree) and not args.force and (
            W.tree_state(ws.tree)[1] or export_differs(ws)):
        raise SystemExit("error: clean: %s has work not in series/: make export, "
                         "or FORCE=1" % ws.tree)
    for d in (ws.build, ws.out):
        shutil.rmtree(d, ignore_errors=True)
    print("removed %s and %s" % (ws.build, ws.out))
    return 0


def stage_deps(ws, args):
    with Stage(ws, "deps", "Debian packages and the base tarball", tree=None) as st:
        deps(ws)
        st.passed = len(PACKAGES)
        st.summary = "%d packages present, base %s" % (len(PACKAGES), base_info(ws)["version"])
    return st.exit_code


def _force(p):
    p.add_argument("--force", action="store_true",
                   help="take series/ even over work that is not in it")


COMMANDS = {
    "deps": ("install the missing Debian packages; fetch the base tarball", None, stage_deps),
    "tree": ("build/linux: the base, b4's cover commit and series/ (kept when it is series/)",
             _force, stage_tree),
    "export": ("write the tree's commits (after the cover commit) into series/", None, stage_export),
    "round-trip": ("series/ is byte for byte what export writes from the tree", None,
                   stage_round_trip),
    "clean": ("remove build/ and out/ (refused while the tree has work not in series/)",
              _force, stage_clean),
}
