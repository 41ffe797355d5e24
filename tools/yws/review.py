"""make review: a maintainer's view of a posted thread: MSGID=<message-id>
fetched from the archive by b4 (the local list while it runs, else b4's
own config: lore), or MBOX=FILE offline; the series it names as its
prerequisite first, then the thread, applied by b4 am onto a fresh base;
the posting's lint; the range-diff against the revision before it (b4 diff
finds it on the archive by change-id; offline, the recorded one). The
runner then runs the stages on the applied tree."""
import os
import signal
import time

from . import cover, deps, inbox, posting, prep
from .thread import b4_am, git_am, one_thread, text, write_mbox
from .ws import SCRATCH_PAIRS, Stage, StageError, b4, git, git_env

STAGES = ["series-check", "kunit", "selftests"]   # what the runner runs on the applied thread


def workspace(ws):
    """The review's own workspace, laid out as the author's: build/review/
    holds its tree (author/, so ccache's relative paths match) and build/."""
    from .ws import Workspace
    top = ws.build / "review"
    return Workspace(ws.root, build=top / "build", out=ws.out / "review", tree=top / "author",
                     series=top / "series", base=ws.base, sender=ws.sender)


def online_env(ws, scratch=True):
    """b4's settings for reading the archive: the local list's while it
    runs, with a cache of its own (else b4's own: lore), and (SCRATCH) an
    identity for its throwaway commits."""
    lst = inbox.state(ws)
    if lst:     # public-inbox-httpd reopens its Xapian search, stale after deliveries
        os.kill(lst["pids"]["httpd"], signal.SIGHUP)
        time.sleep(0.5)
    env = git_env(SCRATCH_PAIRS * scratch + (inbox.config(lst) if lst else []))
    return {**env, "XDG_CACHE_HOME": lst["dir"] + "/cache"} if lst else env   # b4's own


def fetch(ws, msgid, dest):
    """The thread of MSGID from the archive (b4 mbox): its patches, one
    complete revision."""
    dest.mkdir(parents=True, exist_ok=True)
    for p in dest.glob("*.mbx"):
        p.unlink()
    b4(dest, "mbox", "-o", dest, msgid, online=True, label="b4 mbox", env=online_env(ws))
    return one_thread(next(dest.glob("*.mbx")))[0]


def recorded(ws, msgid):
    for name in prep.names(ws):
        for r in cover.posted_revisions(ws, name):
            if posting.cover_msgid(cover.posted(ws, name, r)) == msgid:
                return one_thread(cover.posted(ws, name, r))[0]
    raise StageError("the thread needs <%s> applied first, which no recorded posting is: "
                     "review it by MSGID= from the archive" % msgid)


def apply(ws, rws, pats, top, name):
    norm = top / ("%s.mbox" % name)
    write_mbox([p[4] for p in pats], norm)
    git_am(rws.tree, b4_am(norm, top / "am", top))
    return norm


def range_diff(ws, rws, args, pats, norm, top):
    if pats[0][2] == 1:
        return "range-diff: v1, no earlier revision"
    if args.msgid:
        out = top / "range-diff.txt"
        b4(rws.tree, "diff", "-o", out, "--", args.msgid, online=True, label="b4 diff",
           env=online_env(ws))
        return "range-diff (b4 diff, from the archive): %s" % out
    cid = pats[0][0] == 0 and [s for s in prep.plan(ws) if s[1] in text(pats[0][4])]
    old = cid and [r for r in cover.posted_revisions(ws, cid[0][0]) if r < pats[0][2]]
    if not old:
        return "range-diff: no earlier revision of this change-id recorded"
    out = posting.range_diff(ws, cid[0][0], old[-1], norm, top / (
        "range-diff-v%d.txt" % old[-1]), top)
    return "range-diff against v%d: %s" % (old[-1], out)


def stage_review(ws, args):
    rws = workspace(ws)
    top = rws.tree.parent
    src = args.msgid or args.mbox
    with Stage(ws, "review", "%s -> %s" % (src, rws.tree), tree=None) as st:
        if not src:
            raise StageError("name the thread: make review MSGID=<message-id> (from the "
                             "archive) or MBOX=FILE")
        pats = fetch(ws, args.msgid, top / "thread") if args.msgid else one_thread(args.mbox)[0]
        deps.base_tree(ws, rws.tree)
        git(rws.tree, "checkout", "-q", "-B", "review")
        first = posting.PREREQ.findall(text(pats[0][4])) if pats[0][0] == 0 else []
        for i, m in enumerate(first):
            apply(ws, rws, fetch(ws, m, top / ("prereq%d" % i)) if args.msgid else
                  recorded(ws, m), top, "prereq%d" % i)
        norm = apply(ws, rws, pats, top, "thread")
        st.tree_id = git(rws.tree, "rev-parse", "HEAD^{tree}")
        rev, M = pats[0][2], pats[0][1]
        st.passed += 1
        rows = ["v%d, %d patches%s%s: applies on base, tree %s" % (
            rev, M, "" if pats[0][0] == 0 else " (no cover letter)",
            " after its prerequisite %s" % ", ".join(first) if first else "", st.tree_id[:12])]
        checks = posting.lint(pats, rev)
        bad = [c for c in checks if c[1] == "fail"]
        st.failed += len(bad)
        rows.append("lint: %d checks, %s" % (len(checks), "; ".join(
            "%s: %s" % (c[0], c[2]) for c in bad) or "all pass"))
        rows.append(range_diff(ws, rws, args, pats, norm, top))
        print("\n".join("  " + r for r in rows))
        st.summary = "v%d, %d patches: %s" % (rev, M, "; ".join(rows[1:]))
        st.details = {"revision": rev, "patches": M, "rows": rows}
    return st.exit_code


def _args(p):
    p.add_argument("--msgid", help="the thread's message-id, fetched from the archive")
    p.add_argument("mbox", nargs="?", help="offline: the thread, an mbox file")


COMMANDS = {"review": ("a maintainer's view of MSGID=<message-id> (from the archive) or "
                       "MBOX=FILE: b4 am on a fresh base, lint, range-diff", _args,
                       stage_review)}
