"""cover-letter/NAME/ of each series: the cover text, the changelog of each
revision, and the revisions as posted (posted/vN.*, written by
make send): the one home of "the last posted revision"."""
NO_CHANGE = "- No change since"


def cover_dir(ws, name):
    return ws.root / "cover-letter" / name


def posted(ws, name, rev, ext="mbox"):
    return cover_dir(ws, name) / "posted" / ("v%d.%s" % (rev, ext))


def cover_text(ws, name):
    """cover.txt without its "#" comment lines."""
    return "\n".join(ln for ln in (cover_dir(ws, name) / "cover.txt").read_text().splitlines()
                     if not ln.startswith("#"))


def changelog(ws, name, rev):
    return cover_dir(ws, name) / "changes" / ("v%d.txt" % rev)


def read(path):
    try:
        return path.read_text().strip()
    except OSError:
        return None


def posted_revisions(ws, name):
    d = cover_dir(ws, name) / "posted"
    return sorted(int(p.stem[1:]) for p in d.glob("v*.mbox") if p.stem[1:].isdigit())


def current_revision(ws, name, tree_id):
    """vN+1 after the last posted vN; vN itself while the series' tree,
    cover.txt and changes/vN+1.txt (a stub) are still those of vN."""
    revs = posted_revisions(ws, name)
    if not revs:
        return 1
    n = revs[-1]
    ch = read(changelog(ws, name, n + 1))
    if (read(posted(ws, name, n, "tree")) == tree_id and (ch is None or ch.startswith(NO_CHANGE))
            and read(posted(ws, name, n, "cover.txt")) in (
                None, read(cover_dir(ws, name) / "cover.txt"))):
        return n
    return n + 1
