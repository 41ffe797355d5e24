"""cover-letter/: the cover text, the change-id, the changelog of each
revision, and the revisions as posted (cover-letter/posted/vN.*, written by
record-posting): the one home of "the last posted revision".
"""
from .ws import StageError

NO_CHANGE = "- No change since"


def cover_dir(ws):
    return ws.root / "cover-letter"


def posted(ws, rev, ext="mbox"):
    return cover_dir(ws) / "posted" / ("v%d.%s" % (rev, ext))


def cover_text(ws):
    """cover-letter/cover.txt without its "#" comment lines."""
    return "\n".join(ln for ln in (cover_dir(ws) / "cover.txt").read_text().splitlines()
                     if not ln.startswith("#"))


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


