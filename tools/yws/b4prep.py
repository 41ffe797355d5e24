"""The kernel tree as b4's prep branch, and the posted revisions.

build/linux is branch b4/yama-lsm: the base, b4's cover commit (the text of
cover-letter/ and b4's tracking data: the series' change-id and revision),
then the patches. cover-letter/posted/vN.* are the revisions as posted
(written by record-posting): the one home of "the last posted revision".
"""
import json
import shutil
import time

from . import mail
from .ws import StageError, git

BRANCH = "b4/yama-lsm"
MARK = "--- b4-submit-tracking ---"
NO_CHANGE = "- No change since"


def cover_dir(ws):
    return ws.root / "cover-letter"


def posted(ws, rev, ext="mbox"):
    return cover_dir(ws) / "posted" / ("v%d.%s" % (rev, ext))


def cover_text(ws):
    """cover-letter/cover.txt without its "#" comment lines."""
    return "\n".join(ln for ln in (cover_dir(ws) / "cover.txt").read_text().splitlines()
                     if not ln.startswith("#"))


def cover_commit(tree):
    """b4's cover commit (the first after tag base), or None."""
    first = git(tree, "rev-list", "--reverse", "base..HEAD").split()[:1]
    if first and MARK in git(tree, "log", "-1", "--format=%B", first[0]):
        return first[0]
    return None


def changelog(ws, rev):
    return cover_dir(ws) / "changes" / ("v%d.txt" % rev)


def read(path):
    try:
        return path.read_text().strip()
    except OSError:
        return None


def posted_revisions(ws):
    d = cover_dir(ws) / "posted"
    return sorted(int(p.stem[1:]) for p in d.glob("v*.mbox") if p.stem[1:].isdigit())


def change_id(ws):
    cid = read(cover_dir(ws) / "change-id")
    if not cid:
        raise StageError("no cover-letter/change-id (b4's change-id of the series)")
    return cid


def current_revision(ws, tree_id):
    """vN+1 after the last posted vN; vN itself while the tree, cover.txt
    and changes/vN+1.txt (a stub) are still those of vN."""
    revs = posted_revisions(ws)
    if not revs:
        return 1
    n = revs[-1]
    ch = read(changelog(ws, n + 1))
    if (read(posted(ws, n, "tree")) == tree_id and (ch is None or ch.startswith(NO_CHANGE))
            and read(posted(ws, n, "cover.txt")) in (None, read(cover_dir(ws) / "cover.txt"))):
        return n
    return n + 1


def configure(ws, tree):
    """What b4 needs in the tree: the sender as user.name/email, a mail
    server that refuses (b4 never sends from here), the cover strategy in
    git config, .b4-config at the top (kept out of the tree id)."""
    name, addr, _ = mail.identity(ws)
    for k, v in (("user.name", name), ("user.email", addr),
                 ("sendemail.smtpserver", "/bin/false"),
                 ("b4.prep-cover-strategy", "commit"),
                 ("branch.%s.b4-prep-cover-strategy" % BRANCH, "commit")):
        git(tree, "config", k, v)
    shutil.copyfile(ws.root / ".b4-config", tree / ".b4-config")
    excl = tree / ".git" / "info" / "exclude"
    excl.parent.mkdir(exist_ok=True)
    if "/.b4-config" not in (read(excl) or ""):
        with excl.open("a") as f:
            f.write("/.b4-config\n")


def cover_message(ws, text, rev):
    """A cover commit's message as b4 prep writes it."""
    track = {"series": {"revision": rev, "change-id": change_id(ws),
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
    text = cover_text(ws)
    name, addr, _ = mail.identity(ws)
    now = "%d +0000" % time.time()
    parent = git(tree, "commit-tree", base + "^{tree}", "-p", base, "-F", "-",
                 input=cover_message(ws, text, current_revision(ws, None)),
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
