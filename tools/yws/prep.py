"""make prep: the author's tree (author/, default --tree) as b4's prep
branch b4/yama-lsm: the base commit (tag "base"), b4's cover commit (the
text of cover-letter/ and b4's tracking data: change-id and revision), then
the series. series/ is the repository's record of the series: `export`
writes it from the tree, `round-trip` proves it exact.
"""
import hashlib
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import cover, sender
from . import ws as W
from .deps import base_commit, base_tree
from .ws import Stage, StageError, git, run

SYNCED = "yws-synced"      # in the tree's .git: hash of series/ when the tree last matched it
FORMAT = ["-c", "core.quotePath=true", "-c", "diff.noprefix=false",
          "-c", "diff.mnemonicPrefix=false", "-c", "diff.renames=true",
          "-c", "diff.algorithm=myers", "-c", "format.signature=",
          "-c", "format.headers=", "-c", "format.coverLetter=false"]


BRANCH = "b4/yama-lsm"
MARK = "--- b4-submit-tracking ---"


def cover_commit(tree):
    """b4's cover commit (the first after tag base), or None."""
    first = git(tree, "rev-list", "--reverse", "base..HEAD").split()[:1]
    if first and MARK in git(tree, "log", "-1", "--format=%B", first[0]):
        return first[0]
    return None


def configure(ws, tree):
    """What b4 needs in the tree: the sender as user.name/email, a mail
    server that refuses (b4 never sends from here), the cover strategy in
    git config, .b4-config at the top (kept out of the tree id)."""
    name, addr, _ = sender.identity(ws)
    for k, v in (("user.name", name), ("user.email", addr),
                 ("sendemail.smtpserver", "/bin/false"),
                 ("b4.prep-cover-strategy", "commit"),
                 ("branch.%s.b4-prep-cover-strategy" % BRANCH, "commit")):
        git(tree, "config", k, v)
    shutil.copyfile(ws.root / ".b4-config", tree / ".b4-config")
    excl = tree / ".git" / "info" / "exclude"     # and an editor's files: not the tree
    excl.parent.mkdir(exist_ok=True)
    have = (cover.read(excl) or "").splitlines()
    with excl.open("a") as f:
        f.writelines(p + "\n" for p in ("/.b4-config", ".*.sw?", "*~") if p not in have)


def cover_message(ws, text, rev):
    """A cover commit's message as b4 prep writes it."""
    track = {"series": {"revision": rev, "change-id": cover.change_id(ws),
                        "base-branch": None, "prefixes": []}}
    return "%s\n\n%s\n# This section is used internally by b4 prep for tracking " \
        "purposes.\n%s\n" % (text.strip(), MARK, json.dumps(track, indent=2))


def start(ws, tree):
    """Make TREE (tag base, maybe the series on top) branch b4/yama-lsm:
    base, the cover commit, the commits that were on base. The trees do not
    change, so neither do the index and the files. b4 0.12 cannot set a
    change-id (prep -n makes a new one): the cover commit is written here."""
    configure(ws, tree)
    base = git(tree, "rev-parse", "base^{commit}")
    commits = git(tree, "rev-list", "--reverse", "base..HEAD").split()
    if commits and cover_commit(tree):
        commits = commits[1:]
    text = cover.cover_text(ws)
    name, addr, _ = sender.identity(ws)
    now = "%d +0000" % time.time()
    parent = git(tree, "commit-tree", base + "^{tree}", "-p", base, "-F", "-",
                 input=cover_message(ws, text, cover.current_revision(ws, None)),
                 env={"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": addr,
                      "GIT_AUTHOR_DATE": now, "GIT_COMMITTER_DATE": now})
    keys = ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"]
    for c in commits:  # the committer is the workspace's (ws.git)
        who = git(tree, "log", "-1", "--date=raw", "--format=%an%x00%ae%x00%ad%x00%cd",
                  c).split("\x00")
        parent = git(tree, "commit-tree", c + "^{tree}", "-p", parent, "-F", "-",
                     input=git(tree, "log", "-1", "--format=%B", c) + "\n",
                     env=dict(zip(keys, who)))
    git(tree, "update-ref", "refs/heads/" + BRANCH, parent)
    git(tree, "symbolic-ref", "HEAD", "refs/heads/" + BRANCH)
    return parent


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
        "# Order in which make prep applies these patches (git am).\n" +
        "".join(n + "\n" for n in names))


def export_differs(ws, rev="HEAD"):
    """(The files of series/ that an export of REV would change, the hash
    of that export.)"""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        export_to(ws, tmp, rev)
        names = {p.name for p in tmp.iterdir()} | {p.name for p in ws.series.glob("*.patch")}
        return sorted(n for n in names | {"series"} if not (ws.series / n).exists() or
                      not (tmp / n).exists() or
                      (ws.series / n).read_bytes() != (tmp / n).read_bytes()), series_hash(tmp)


def _reuse_or_reset(ws, force):
    """Keep the tree when its commits are series/ (uncommitted edits are
    the developer's work in progress: kept, and tested as they are). When
    series/ changed (a pull), take it if the tree's commits are still what
    series/ was when they last matched (nothing to lose), or FORCE."""
    differ, exported = export_differs(ws)
    if not differ:
        return True
    dirty = git(ws.tree, "status", "--porcelain", "--untracked-files=no")
    if not force and (dirty or exported != _synced(ws)):
        raise StageError(
            "series/ and %s differ (%s) and the tree has work that is not in "
            "series/: commit it and make export, or FORCE=1 to take series/ "
            "and lose it" % (ws.tree, "uncommitted edits" if dirty
                             else ", ".join(differ[:4])))
    git(ws.tree, "am", "--abort", check=False)
    git(ws.tree, "reset", "-q", "--hard", cover_commit(ws.tree) or "base")
    print("  series/ changed: applying it again", flush=True)
    return False


def stage_prep(ws, args):
    with Stage(ws, "prep", "base %s + series/ -> %s" % (ws.base, ws.tree),
               tree=None) as st:
        if (ws.tree / ".git").exists() and base_commit(ws.tree):
            kept = _reuse_or_reset(ws, args.force)
            configure(ws, ws.tree)
        else:
            if ws.tree.exists() and any(ws.tree.iterdir()) and not args.force:
                raise StageError("%s exists and is no tree of this workspace (no tag "
                                 "base): move it away, or FORCE=1 to replace it" % ws.tree)
            base_tree(ws, ws.tree)
            start(ws, ws.tree)
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
    with Stage(ws, "export") as st:
        if git(ws.tree, "status", "--porcelain", "--untracked-files=no"):
            raise StageError("%s has uncommitted edits: commit them first" % ws.tree)
        with tempfile.TemporaryDirectory() as d:
            export_to(ws, Path(d))
            ws.series.mkdir(exist_ok=True)
            for p in ws.series.glob("*.patch"):
                p.unlink()
            for p in Path(d).iterdir():
                shutil.copy2(p, ws.series / p.name)
        _mark_synced(ws)
        st.passed = len(series_files(ws))
        st.summary = "%d patches written to series/" % st.passed
    return st.exit_code


def stage_round_trip(ws, args):
    with Stage(ws, "round-trip") as st:
        differ = export_differs(ws)[0]
        if differ:
            raise StageError("series/ is not what make export writes (%s): "
                             "make export, or make prep FORCE=1" % ", ".join(differ[:4]))
        st.passed = 1
        st.summary = "the %d patches and their order, byte for byte" % len(series_files(ws))
    return st.exit_code


def _force(p):
    p.add_argument("--force", action="store_true",
                   help="take series/ even over work that is not in it")


COMMANDS = {
    "prep": ("the author's tree (author/): the base, b4's cover commit and series/ "
             "(kept when it is series/; FORCE=1 takes series/ over work not in it)",
             _force, stage_prep),
    "export": ("write the tree's commits (after the cover commit) into series/", None, stage_export),
    "round-trip": ("series/ is byte for byte what export writes from the tree", None,
                   stage_round_trip),
}
