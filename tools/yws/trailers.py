"""make trailers: b4 trailers -u on each series' b4 prep branch: online,
b4 finds the replies on the archive by the series' change-id (the local
list while it runs, else b4's own config: lore); MBOX=FILE offline, where
the recorded threads are added to what a mail client exported. Then
export to series/; the replies that NAK or comment without a trailer are
listed to answer."""
import re
import tempfile
from pathlib import Path

from . import cover, inbox, prep
from .posting import cover_msgid
from .review import online_env
from .thread import SUBJ, numbered, read_mbox, text, unfold
from .ws import Stage, StageError, b4, git

NAK = re.compile(r"(?mi)^\s*(nack(ed)?-by:|NAK\b|NACK\b)")
TRAILER = re.compile(r"(?mi)^\s*(reviewed|acked|tested|reported|suggested)-by:\s*\S")
FULL = re.compile(r"(?mi)^\s*(?:reviewed|acked|tested)-by:.*$")


def comments(msgs):
    """What b4 trailers does not say: the replies that NAK or comment
    without a trailer, to answer. [(from, subject, nak)]"""
    out = []
    for m in msgs:
        s = unfold(m.get("Subject"))
        if not re.match(r"(?i)^re:", s):
            continue
        own = "\n".join(ln for ln in text(m).split("\n-- \n")[0].splitlines()
                        if ln.strip() and not ln.lstrip().startswith(">")
                        and not re.match(r"^On .* wrote:$", ln))
        nak = bool(NAK.search(own))
        if nak or (own and not TRAILER.search(own)):
            out.append((unfold(m.get("From")), s, nak))
    return out


def unapplied(msgs, messages):
    """The replies to a patch whose trailers b4 did not put on the commit
    of that subject (MESSAGES: {subject: commit message}): a reply to an
    older revision of a patch that changed since, as b4 carries trailers
    only to the same patch. [(from, subject)]"""
    out = []
    for m in msgs:
        p = SUBJ.match(re.sub(r"(?i)^re: *", "", unfold(m.get("Subject"))))
        own = "\n".join(ln for ln in text(m).splitlines() if not ln.lstrip().startswith(">"))
        got = p and int(p.group(2)) and messages.get(p.group(4))
        if got and any(t.strip() not in got for t in FULL.findall(own)):
            out.append((unfold(m.get("From")), unfold(m.get("Subject"))))
    return out


def with_threads(ws, name, mbox, tmp):
    """MBOX, and if it holds no patch (a mail client's export of the
    replies), series NAME's recorded threads with it: b4 needs the patches
    the replies answer, of that series alone (b4 keys a mailbox's series
    by revision)."""
    if numbered(read_mbox(mbox)):
        return mbox
    threads = [cover.posted(ws, name, r) for r in cover.posted_revisions(ws, name)]
    if not threads:
        raise StageError("%s holds replies only and %s has no recorded revision "
                         "(cover-letter/%s/posted/): save the whole thread" % (mbox, name, name))
    out = Path(tmp) / ("%s.mbox" % name)
    out.write_bytes(b"".join(Path(t).read_bytes() for t in threads) + Path(mbox).read_bytes())
    return out


def stage_trailers(ws, args):
    where = args.mbox or "the archive"
    with Stage(ws, "trailers", "%s -> %s" % (where, ws.tree)) as st, \
            tempfile.TemporaryDirectory() as tmp:
        if st.dirty:
            raise StageError("%s has uncommitted edits: commit them first" % ws.tree)
        msgs = read_mbox(args.mbox) if args.mbox else []
        mboxes = {n: with_threads(ws, n, args.mbox, tmp) for n in prep.names(ws)
                  if args.mbox and (numbered(msgs) or cover.posted_revisions(ws, n))}
        if args.mbox and not mboxes:
            with_threads(ws, prep.names(ws)[-1], args.mbox, tmp)   # says why
        lst = inbox.state(ws)
        print("  replies from %s" % (args.mbox or lst and lst["http"] or "b4's own "
                                     "b4.midmask/searchmask (lore, unless configured)"))
        before = [git(ws.tree, "log", "-1", "--format=%B", c) for c in prep.patches(ws.tree)]
        for name in prep.names(ws):
            if args.mbox and name not in mboxes:
                continue
            with prep.on_branch(ws.tree, name):
                out = b4(ws.tree, "trailers", "-u", *(["-m", mboxes[name]] if args.mbox else []),
                         env=online_env(ws, scratch=False), online=not args.mbox, label="b4 trailers")
            print("\n".join("  %s | %s" % (name, ln) for ln in out.splitlines()))
        after = [git(ws.tree, "log", "-1", "--format=%B", c) for c in prep.patches(ws.tree)]
        changed = sum(a != b for a, b in zip(after, before))
        for name in prep.names(ws) if lst and not msgs else []:
            for r in cover.posted_revisions(ws, name):
                got = Path(tmp) / ("%s-v%d.mbox" % (name, r))
                got.write_bytes(inbox.archive(lst, cover_msgid(cover.posted(ws, name, r))) or b"")
                msgs += read_mbox(got) if got.stat().st_size else []
        for who, subj, nak in comments(msgs):
            print("  %s from %s: %s" % ("NAK" if nak else "comment to answer", who, subj))
        lost = unapplied(msgs, {m.split("\n", 1)[0]: m for m in after})
        for who, subj in lost:
            print("  NOT applied (a reply to an older revision of a patch that changed "
                  "since?): %s: %s" % (who, subj))
        if changed and prep.stage_export(ws, args):
            raise StageError("the trailers are in the tree, the export failed")
        st.passed = 1 + changed
        st.details = {"commits_changed": changed, "comments": comments(msgs), "unapplied": lost}
        st.summary = "%d commit(s) got trailers%s; %d reply(ies) to answer" % (
            changed, ", series/ exported" if changed else "", len(st.details["comments"]))
    return st.exit_code


def _mbox_arg(p):
    p.add_argument("mbox", nargs="?", help="offline: the replies, an mbox file")


COMMANDS = {"trailers": ("b4 trailers -u on each series: the replies on the archive (the "
                         "local list while it runs), or MBOX=FILE; then export to series/",
                         _mbox_arg, stage_trailers)}
