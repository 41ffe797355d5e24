"""make prep: the author's tree (author/, default --tree): on the base
commit (tag "base"), each series of series/series as a b4 prep branch
b4/NAME, stacked (b4's cover commit, with the series' change-id and
prefixes, then its patches); HEAD is the top one. series/ is the
repository's record of the series: `export` writes it from the tree,
`round-trip` proves it exact.
"""
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import cover, sender
from . import ws as W
from .deps import base_commit, base_tree
from .ws import Stage, StageError, b4, git, run

SYNCED = "yws-synced"      # in the tree's .git: hash of series/ when the tree last matched it
FORMAT = ["-c", "core.quotePath=true", "-c", "diff.noprefix=false",
          "-c", "diff.mnemonicPrefix=false", "-c", "diff.renames=true",
          "-c", "diff.algorithm=myers", "-c", "format.signature=",
          "-c", "format.headers=", "-c", "format.coverLetter=false"]


MARK = "--- b4-submit-tracking ---"


def tracking(tree, commit):
    """b4's tracking data in COMMIT's message (a b4 cover commit), or None."""
    msg = git(tree, "log", "-1", "--format=%B", commit)
    if MARK not in msg:
        return None
    return json.loads("\n".join(ln for ln in msg.split(MARK, 1)[1].splitlines()
                                if not ln.startswith("#")))["series"]


def layout(tree, rev="HEAD"):
    """The stacked series from the base to REV, bottom up: [(cover commit,
    b4's tracking, [commits])]; commits before any cover commit come first
    with (None, None)."""
    out = [(None, None, [])]
    for c in git(tree, "rev-list", "--reverse", "base..%s" % rev).split():
        t = tracking(tree, c)
        if t is None:
            out[-1][2].append(c)
        else:
            out.append((c, t, []))
    return out if out[0][2] else out[1:]


def cover_commit(tree, rev="HEAD"):
    """The b4 cover commit of the series REV is on (the last one), or None."""
    return ([g[0] for g in layout(tree, rev)] or [None])[-1]


def configure(ws, tree):
    """What b4 needs in the tree: the sender as user.name/email, a mail
    server that refuses (b4 never sends from here), the cover strategy in
    git config, .b4-config at the top (kept out of the tree id)."""
    name, addr, _ = sender.identity(ws)
    for k, v in (("user.name", name), ("user.email", addr),
                 ("sendemail.smtpserver", "/bin/false"),
                 ("b4.prep-cover-strategy", "commit")):
        git(tree, "config", k, v)
    shutil.copyfile(ws.root / ".b4-config", tree / ".b4-config")
    excl = tree / ".git" / "info" / "exclude"     # and an editor's files: not the tree
    excl.parent.mkdir(exist_ok=True)
    have = (cover.read(excl) or "").splitlines()
    with excl.open("a") as f:
        f.writelines(p + "\n" for p in ("/.b4-config", ".*.sw?", "*~") if p not in have)


def recommit(tree, c, parent, tree_of=None, message=None):
    """Commit C again on PARENT: its author, the tree of TREE_OF (else its
    own), MESSAGE (else its own); the new commit id."""
    who = git(tree, "log", "-1", "--date=raw", "--format=%an%x00%ae%x00%ad%x00%B", c)
    who = who.split("\x00", 3)
    return git(tree, "commit-tree", (tree_of or c) + "^{tree}", "-p", parent, "-F", "-",
               input=(message or who[3]).rstrip("\n") + "\n", env=dict(zip(
                   ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE"), who)))


def enroll(ws, tree, name, change_id, prefixes):
    """Branch b4/NAME at HEAD, with a cover commit b4 prep wrote, holding
    the series' recorded CHANGE_ID. b4 0.12 enrolls no branch that holds
    another series' cover commit, and makes a new change-id with no option
    to keep one: it enrolls a branch at the base, its cover commit goes on
    HEAD and the change-id into the tracking b4 wrote."""
    at = git(tree, "rev-parse", "HEAD")
    git(tree, "checkout", "-q", "-f", "-B", "b4/" + name, "base")
    b4(tree, "prep", "-e", "base")
    text, track = git(tree, "log", "-1", "--format=%B", "HEAD").split(MARK, 1)
    git(tree, "reset", "-q", "--hard", recommit(tree, "HEAD", at, at, text + MARK + re.sub(
        r'"change-id": "[^"]*"', '"change-id": "%s"' % change_id, track)))
    if prefixes:
        b4(tree, "prep", "--set-prefixes", *prefixes)
    (tree / ".git" / ("yws-cover-" + name)).unlink(missing_ok=True)


def restack(ws, tree):
    """Each series' branch b4/NAME to its part of the stack HEAD is on
    (the top series' branch): the branch of a lower series follows edits
    made on the top one."""
    names = {s[1]: s[0] for s in plan(ws)}
    for cc, track, commits in layout(tree):
        if cc and track["change-id"] in names:
            git(tree, "update-ref", "refs/heads/b4/" + names[track["change-id"]],
                (commits or [cc])[-1])


@contextlib.contextmanager
def on_branch(tree, name):
    """b4 works on the checked-out branch: check out b4/NAME, then the top
    branch again, its commits above b4/NAME replayed onto what b4 made of
    it (b4 rewrites messages only, so every tree stays). The files the
    checkouts rewrite get their times back (same contents): kernel builds
    do not start over."""
    top = git(tree, "symbolic-ref", "--short", "HEAD")
    old = git(tree, "rev-parse", "b4/" + name)
    if top == "b4/" + name:
        yield
        return
    times = {f: f.stat().st_mtime_ns for f in (tree / n for n in git(
        tree, "diff", "--name-only", old, "HEAD").splitlines()) if f.exists()}
    git(tree, "checkout", "-q", "b4/" + name)
    try:
        yield
    finally:
        new = git(tree, "rev-parse", "b4/" + name)
        moved = git(tree, "rev-parse", new + "^{tree}") != git(tree, "rev-parse", old + "^{tree}")
        for c in git(tree, "rev-list", "--reverse", "%s..%s" % (old, top)).split() * (
                new != old and not moved):
            new = recommit(tree, c, new)
        if new != old and not moved:
            git(tree, "update-ref", "refs/heads/" + top, new)
        git(tree, "checkout", "-q", top)
        for f, t in times.items():
            os.utime(f, ns=(t, t))
        if moved:
            raise StageError("b4/%s changed its tree: rebase %s onto it by hand" % (name, top))


def patches(tree, rev="HEAD"):
    """The series' commits in order, without b4's cover commits."""
    return [c for g in layout(tree, rev) for c in g[2]]


def plan(ws):
    """series/series: [(name, change-id, b4 prefixes, [patch files])]. A
    line "series NAME CHANGE-ID [PREFIX...]" starts the b4 prep branch
    b4/NAME, stacked on the series before it (patches before any such line:
    on the base, in no b4 series)."""
    out = [(None, None, [], [])]
    try:
        lines = (ws.series / "series").read_text().splitlines()
    except FileNotFoundError:
        return []
    for ln in lines:
        w = ln.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "series" and len(w) >= 3:
            out.append((w[1], w[2], w[3:], []))
        elif len(w) == 1:
            out[-1][3].append(ws.series / w[0])
        else:
            raise StageError("series/series: %r is neither a patch nor "
                             "\"series NAME CHANGE-ID [PREFIX...]\"" % ln)
    return out if out[0][3] else out[1:]


def names(ws):
    """The b4 series of series/series, bottom up."""
    return [s[0] for s in plan(ws) if s[0]]


def series_files(ws):
    """series/'s patch files in the order of series/series."""
    return [p for s in plan(ws) for p in s[3]]


def build(ws, tree):
    """From the base: each series of series/series as its b4 prep branch,
    stacked. The number of patches applied."""
    git(tree, "checkout", "-q", "-f", "--detach", "base")
    for name, cid, prefixes, files in plan(ws):
        if name:
            enroll(ws, tree, name, cid, prefixes)
        apply_series(ws, tree, files)
    return len(series_files(ws))


def apply_series(ws, tree, files):
    """git am FILES onto HEAD; names the patch and files that fail."""
    for i, p in enumerate(files):
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
    """Write the patches of the tree's series up to REV and their order
    (with each series' line: its name, b4's change-id and prefixes) into DEST."""
    tree, names = ws.tree, {s[1]: s[0] for s in plan(ws)}
    if git(tree, "rev-list", "--merges", "%s..%s" % (base_commit(tree), rev)):
        raise StageError("the series has merge commits; rebase it to a line")
    dest.mkdir(parents=True, exist_ok=True)
    order, n = ["# Order in which make prep applies these patches (git am)."], 0
    for cc, track, commits in layout(tree, rev):
        if cc:
            if track["change-id"] not in names:
                raise StageError("b4 change-id %s is no series of series/series: add its "
                                 "line \"series NAME CHANGE-ID\"" % track["change-id"])
            order.append(" ".join(["series", names[track["change-id"]], track["change-id"],
                                   *track.get("prefixes", [])]))
        if commits:
            format_patch(tree, "-q", "--zero-commit", "--no-numbered", "--no-cover-letter",
                         "--no-thread", "--no-base", "--start-number", str(n + 1), "-o", dest,
                         "%s^..%s" % (commits[0], commits[-1]))
        new = sorted(p.name for p in dest.glob("*.patch"))[n:]
        order += new
        n += len(new)
    (dest / "series").write_text("\n".join(order) + "\n")


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
    print("  series/ changed: applying it again", flush=True)
    return False


def stage_prep(ws, args):
    with Stage(ws, "prep", "base %s + series/ -> %s" % (ws.base, ws.tree),
               tree=None) as st:
        if (ws.tree / ".git").exists() and base_commit(ws.tree):
            kept = _reuse_or_reset(ws, args.force)
        else:
            if ws.tree.exists() and any(ws.tree.iterdir()) and not args.force:
                raise StageError("%s exists and is no tree of this workspace (no tag "
                                 "base): move it away, or FORCE=1 to replace it" % ws.tree)
            base_tree(ws, ws.tree)
            kept = False
        configure(ws, ws.tree)
        if kept:
            restack(ws, ws.tree)
        n = len(patches(ws.tree)) if kept else build(ws, ws.tree)
        head = git(ws.tree, "rev-parse", "HEAD")
        _mark_synced(ws)
        st.tree_id, st.dirty = W.tree_state(ws.tree)
        st.passed = n + 1
        st.summary = "%s: tip %s, %d patches in %d series on base %s" % (
            "kept" if kept else "applied", head[:12], n, len(plan(ws)), base_commit(ws.tree)[:12])
    return st.exit_code


def stage_export(ws, args):
    with Stage(ws, "export", argv=["export"]) as st:
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
    "prep": ("the author's tree (author/): the base, each series as a b4 prep branch "
             "(kept when it is series/; FORCE=1 takes series/ over work not in it)",
             _force, stage_prep),
    "export": ("write the tree's commits (not b4's cover commits) into series/", None,
               stage_export),
    "round-trip": ("series/ is byte for byte what export writes from the tree", None,
                   stage_round_trip),
}
