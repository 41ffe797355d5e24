"""make trailers: b4 trailers -u from the replies onto the tree's commits,
then export to series/; the replies that comment without a trailer or NAK
are listed to answer."""
import re

from . import prep
from .thread import read_mbox, text, unfold
from .ws import Stage, StageError, git, run

NAK = re.compile(r"(?mi)^\s*(nack(ed)?-by:|NAK\b|NACK\b)")
TRAILER = re.compile(r"(?mi)^\s*(reviewed|acked|tested|reported|suggested)-by:\s*\S")


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


def stage_trailers(ws, args):
    with Stage(ws, "trailers", "%s -> %s" % (args.mbox, ws.tree)) as st:
        if not args.mbox:
            raise StageError("name the replies: make trailers MBOX=FILE")
        msgs = read_mbox(args.mbox)
        if st.dirty:
            raise StageError("%s has uncommitted edits: commit them first" % ws.tree)
        before = [git(ws.tree, "log", "-1", "--format=%B", c) for c in prep.patches(ws.tree)]
        res = run(["b4", "--offline-mode", "--no-stdin", "trailers", "-u", "-m",
                   args.mbox], cwd=ws.tree, capture=True, check=False, label="b4 trailers")
        out = (res.stdout + res.stderr).strip()
        print("\n".join("  | " + ln for ln in out.splitlines()))
        if res.returncode:
            raise StageError("b4 trailers -u failed (exit %d), nothing changed" % res.returncode)
        after = [git(ws.tree, "log", "-1", "--format=%B", c) for c in prep.patches(ws.tree)]
        changed = sum(a != b for a, b in zip(after, before))
        for who, subj, nak in comments(msgs):
            print("  %s from %s: %s" % ("NAK" if nak else "comment to answer", who, subj))
        if changed and prep.stage_export(ws, args):
            raise StageError("the trailers are in the tree, the export failed")
        st.passed = 1 + changed
        st.details = {"commits_changed": changed, "comments": comments(msgs)}
        st.summary = "%d commit(s) got trailers%s; %d reply(ies) to answer" % (
            changed, ", series/ exported" if changed else "", len(st.details["comments"]))
    return st.exit_code


def _mbox_arg(p):
    p.add_argument("mbox", nargs="?", help="the replies, an mbox file")


COMMANDS = {"trailers": ("b4 trailers -u -m MBOX=FILE in the tree, then export to series/; "
                         "the replies to answer", _mbox_arg, stage_trailers)}
