"""make review: a maintainer's view of a posted thread: b4 am onto a fresh
base, the posting's lint, the range-diff against the last posted revision;
the runner then runs the stages on the applied tree."""
from . import cover, deps, posting
from .thread import b4_am, git_am, one_thread, text, write_mbox
from .ws import Stage, StageError, git

STAGES = ["series-check", "kunit", "selftests"]   # what the runner runs on the applied thread


def workspace(ws):
    """The review's own workspace, laid out as the author's: build/review/
    holds its tree (author/, so ccache's relative paths match) and build/."""
    from .ws import Workspace
    top = ws.build / "review"
    return Workspace(ws.root, build=top / "build", out=ws.out / "review", tree=top / "author",
                     series=top / "series", base=ws.base, sender=ws.sender)


def stage_review(ws, args):
    rws = workspace(ws)
    top = rws.tree.parent
    with Stage(ws, "review", "%s -> %s" % (args.mbox, rws.tree), tree=None) as st:
        if not args.mbox:
            raise StageError("name the thread: make review MBOX=FILE")
        pats, _ = one_thread(args.mbox)
        top.mkdir(parents=True, exist_ok=True)
        norm = top / "thread.mbox"
        write_mbox([p[4] for p in pats], norm)
        deps.base_tree(ws, rws.tree)
        git(rws.tree, "checkout", "-q", "-B", "review")
        git_am(rws.tree, b4_am(norm, top / "am", top))
        st.tree_id = git(rws.tree, "rev-parse", "HEAD^{tree}")
        rev, M = pats[0][2], pats[0][1]
        st.passed += 1
        rows = ["v%d, %d patches%s: applies on base, tree %s" % (
            rev, M, "" if pats[0][0] == 0 else " (no cover letter)", st.tree_id[:12])]
        checks = posting.lint(pats, rev)
        bad = [c for c in checks if c[1] == "fail"]
        st.failed += len(bad)
        rows.append("lint: %d checks, %s" % (len(checks), "; ".join(
            "%s: %s" % (c[0], c[2]) for c in bad) or "all pass"))
        old = [r for r in cover.posted_revisions(ws) if r < rev]
        if old and pats[0][0] == 0 and cover.change_id(ws) in text(pats[0][4]):
            out = posting.range_diff(ws, old[-1], norm, top / ("range-diff-v%d.txt" % old[-1]), top)
            rows.append("range-diff against v%d: %s" % (old[-1], out))
        else:
            rows.append("range-diff: no earlier revision of this change-id recorded")
        print("\n".join("  " + r for r in rows))
        st.summary = "v%d, %d patches: %s" % (rev, M, "; ".join(rows[1:]))
        st.details = {"revision": rev, "patches": M, "rows": rows}
    return st.exit_code


COMMANDS = {"review": ("a maintainer's view of MBOX=FILE: b4 am on a fresh base, lint, "
                       "range-diff",
                       lambda p: p.add_argument("mbox", nargs="?", help="the thread, an mbox"),
                       stage_review)}
