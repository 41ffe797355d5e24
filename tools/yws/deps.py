"""make deps: the Debian packages the stages run, and the base: the orig
tarball of Debian's linux source package, checked against its .dsc, and
the base commit made from it (cached under ~/.cache, id recorded in
tools/bases/<base>.toml)."""
import hashlib
import shutil
import subprocess
import tomllib
from pathlib import Path

from .ws import Stage, StageError, git, run


PACKAGES = """gcc make flex bison bc libelf-dev libssl-dev dwarves cpio xz-utils
    python3 python3-pytest python3-docutils python3-ply python3-git perl
    qemu-system-x86 qemu-utils busybox-static libc6-dev rsync b4 git
    git-filter-repo codespell sparse ccache lz4 lld hyperfine
    public-inbox libsearch-xapian-perl libnet-server-perl python3-aiosmtpd""".split()


CACHE = Path.home() / ".cache" / "yama-workspace"


def base_info(ws):
    """tools/bases/<base>.toml with the derived tarball path and top folder."""
    conf = ws.root / "tools" / "bases" / (ws.base + ".toml")
    if not conf.exists():
        raise StageError("unknown base %r (no %s)" % (ws.base, conf))
    b = tomllib.loads(conf.read_text())
    up = b["version"].split(":")[-1].split("-")[0]
    b["tarball"] = ws.build / "deps" / ("%s_%s.orig.tar.xz" % (b["package"], up))
    b["dsc"] = ws.build / "deps" / ("%s_%s.dsc" % (
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
    apt = ws.dir("deps") / "apt"
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


def stage_deps(ws, args):
    with Stage(ws, "deps", tree=None) as st:
        deps(ws)
        st.passed = len(PACKAGES)
        st.summary = "%d packages present, base %s" % (len(PACKAGES), base_info(ws)["version"])
    return st.exit_code


COMMANDS = {"deps": ("install the missing Debian packages (apt-get); fetch the base tarball "
                     "(apt-get source)", None, stage_deps)}
