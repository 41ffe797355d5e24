"""Who sends, and mail coming back: the sender identity (its one home),
`review MBOX` (a maintainer's view of a posted thread) and `trailers MBOX`
(b4 trailers -u from the replies, then export to series/)."""
import email.generator
import email.policy
import email.utils
import io
import re
import shutil

from . import check, tree as T
from .ws import COMMITTER, Stage, StageError, Workspace, git, run

PLACEHOLDER = ("Yama Developers", "yama-dev@example.org")
RESERVED = ("example", "invalid", "test", "localhost")
SUBJ = re.compile(r"^\[(?:PATCH|RFC)(?: ([^\]]*?))? ?(\d+)/(\d+)\] *(.*)$")


# ------------------------------------------------------------ the sender
def placeholder_reasons(addr):
    """Why ADDR cannot send the posting (empty when it can)."""
    addr = addr.lower()
    domain = addr.rsplit("@", 1)[-1].rstrip(".")
    why = []
    if addr == PLACEHOLDER[1]:
        why.append("it is the workspace's built-in placeholder")
    if "noreply" in addr or "no-reply" in addr:
        why.append("it is a no-reply address: replies and reviews cannot reach it")
    labels = domain.split(".")
    if labels[-1] in RESERVED or ".".join(labels[-2:]) in (
            "example.com", "example.net", "example.org"):
        why.append("its domain %s is reserved (RFC 2606, RFC 6761) and takes no mail" % domain)
    return why


def identity(ws):
    """(name, address, source) of the sender, like b4: --sender "Name <addr>",
    else the workspace's git config user.name/user.email, else the
    placeholder. source is "sender", "git" or "placeholder"."""
    if ws.sender:
        m = re.match(r"^\s*([^<>]*[^<>\s])\s+<([^<>@\s]+@[^<>@\s]+)>\s*$", ws.sender)
        if not m:
            raise StageError("--sender %r is not of the form \"Name <address>\"" % ws.sender)
        return m.group(1), m.group(2), "sender"
    name = git(ws.root, "config", "--get", "user.name", check=False)
    addr = git(ws.root, "config", "--get", "user.email", check=False)
    if name and addr:
        return name, addr, "git"
    return PLACEHOLDER + ("placeholder",)


def sendable(ident):
    return not placeholder_reasons(ident[1])


def warning(ident):
    """The WARNING lines when IDENT is a placeholder, else ""."""
    why = placeholder_reasons(ident[1])
    if not why:
        return ""
    lines = ["the posting is NOT sendable as it stands: it is From: and Signed-off-by:",
             "\"%s <%s>\", a placeholder, not a sender:" % ident[:2]]
    lines += ["  - " + w for w in why]
    lines += ["It comes from %s." % {"sender": "--sender (make SENDER=...)",
                                     "git": "git config user.name/user.email",
                                     "placeholder": "nothing: no SENDER, no git config"}[ident[2]],
              "Give a real one (git config --global user.name/user.email) or run",
              "make SENDER=\"Name <address>\", then make again."]
    return "\n".join("WARNING: " + ln for ln in lines)


# ------------------------------------------------------------ threads
def unfold(value):
    return " ".join(str(value or "").split())


def numbered(msgs):
    """[(n, M, revision, subject, message)] of the [PATCH n/M] messages."""
    out = []
    for m in msgs:
        s = unfold(m.get("Subject"))
        p = SUBJ.match(s)
        if p and not re.match(r"(?i)^(re|aw|sv|fwd?):", s):
            rev = re.search(r"\bv(\d+)\b", p.group(1) or "")
            out.append((int(p.group(2)), int(p.group(3)), int(rev.group(1)) if rev else 1,
                        p.group(4), m))
    return out


def text(m):
    """The plain text of a message, LF line ends."""
    for part in m.walk():
        if part.get_content_type() == "text/plain":
            data = part.get_payload(decode=True) or b""
            return data.decode(part.get_content_charset() or "utf-8",
                               "replace").replace("\r\n", "\n")
    return ""


def read_mbox(path):
    """The messages of the mbox PATH, CRLF and folded headers undone."""
    try:
        data = open(path, "rb").read().replace(b"\r\n", b"\n")
    except OSError as e:
        raise StageError("cannot read %s: %s" % (path, e))
    if not data.startswith(b"From "):
        raise StageError("%s is not an mbox (no 'From ' line at its start)" % path)
    msgs = []
    for chunk in re.split(rb"(?m)^From .*\n", data)[1:]:
        m = email.message_from_bytes(chunk, policy=email.policy.compat32)
        for k in set(m.keys()):
            vals = m.get_all(k)
            del m[k]
            for v in vals:
                m[k] = unfold(v)
        msgs.append(m)
    return msgs


def write_mbox(msgs, path):
    with open(path, "wb") as f:
        for m in msgs:
            buf = io.BytesIO()
            email.generator.BytesGenerator(buf, mangle_from_=True, maxheaderlen=0).flatten(m)
            f.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" +
                    buf.getvalue().rstrip(b"\n") + b"\n\n")


def one_thread(path):
    """The patches of one complete revision in PATH, sorted by n, and the
    other messages (replies)."""
    msgs = read_mbox(path)
    pats = numbered(msgs)
    if not pats:
        raise StageError("%s holds no [PATCH n/M] message" % path)
    if len({p[2] for p in pats}) > 1 or len({p[1] for p in pats}) > 1:
        raise StageError("%s mixes revisions or series lengths: save one thread" % path)
    M, seen = pats[0][1], {p[0]: p for p in pats}
    missing = [n for n in range(1, M + 1) if n not in seen]
    if missing:
        raise StageError("%s lacks patch(es) %s of %d" % (path, missing, M))
    ids = {id(p[4]) for p in pats}
    return [seen[n] for n in sorted(seen)], [m for m in msgs if id(m) not in ids]


def b4_am(mbox, outdir, cwd):
    """b4 am -m MBOX (offline): the .mbx git am takes."""
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    who = {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "user.name",
           "GIT_CONFIG_VALUE_0": "b4 am", "GIT_CONFIG_KEY_1": "user.email",
           "GIT_CONFIG_VALUE_1": "b4-am@localhost"}
    res = run(["b4", "--offline-mode", "--no-stdin", "am", "-m", mbox, "-o", outdir],
              cwd=cwd, env=who, capture=True, check=False, label="b4 am")
    mbx = sorted(outdir.glob("*.mbx"))
    if res.returncode or not mbx:
        raise StageError("b4 am -m %s gave no patches: %s" % (
            mbox, (res.stdout + res.stderr).strip()[-300:]))
    return mbx[0]


def git_am(tree, mbx):
    res = run(["git", "-C", tree, "am", "-q", mbx], env=COMMITTER, capture=True, check=False)
    if res.returncode:
        git(tree, "am", "--abort", check=False)
        raise StageError("git am of %s fails: %s" % (mbx, (res.stdout + res.stderr)
                                                    .strip().splitlines()[-1:]))


# ------------------------------------------------------------ review
REVIEW_STAGES = [("series-check", []), ("kunit", []), ("selftests", [])]


def stage_review(ws, args):
    from . import b4prep, posting
    rws = Workspace(ws.root, build=ws.build / "review", out=ws.out / "review",
                    tree=ws.build / "review" / "linux", series=ws.build / "review" / "series",
                    base=ws.base, sender=ws.sender)
    with Stage(ws, "review", "b4 am of %s on a fresh base (%s), then %s" % (
            args.mbox, rws.tree, " ".join(args.stages)), tree=None) as st:
        if not args.mbox:
            raise StageError("name the thread: make review MBOX=FILE")
        pats, _ = one_thread(args.mbox)
        rws.build.mkdir(parents=True, exist_ok=True)
        norm = rws.build / "thread.mbox"
        write_mbox([p[4] for p in pats], norm)
        T.base_tree(ws, rws.tree)
        git(rws.tree, "checkout", "-q", "-B", "review")
        git_am(rws.tree, b4_am(norm, rws.build / "am", rws.build))
        tid = git(rws.tree, "rev-parse", "HEAD^{tree}")
        rev, M = pats[0][2], pats[0][1]
        st.passed += 1
        rows = ["v%d, %d patches%s: applies on base, tree %s" % (
            rev, M, "" if pats[0][0] == 0 else " (no cover letter)", tid[:12])]
        checks = posting.lint(pats, rev)
        bad = [c for c in checks if c[1] == "fail"]
        st.failed += len(bad)
        rows.append("lint: %d checks, %s" % (len(checks), "; ".join(
            "%s: %s" % (c[0], c[2]) for c in bad) or "all pass"))
        old = [r for r in b4prep.posted_revisions(ws) if r < rev]
        if old and pats[0][0] == 0 and b4prep.change_id(ws) in text(pats[0][4]):
            out = rws.build / ("range-diff-v%d.txt" % old[-1])
            posting.range_diff(ws, old[-1], norm, out)
            rows.append("range-diff against v%d: %s" % (old[-1], out))
        else:
            rows.append("range-diff: no earlier revision of this change-id recorded")
        for stage in args.stages:
            print(flush=True)
            rec = check.run_stage(rws, stage, [], rerun=True)
            ok = rec["verdict"] == "pass" and rec["tree"] == tid
            st.passed, st.failed = st.passed + ok, st.failed + (not ok)
            rows.append("%s: %s" % (stage, "%s (%d passed, %d failed): %s" % (
                rec["verdict"], rec["passed"], rec["failed"], rec["summary"])
                if rec else "no result"))
        print("== review summary\n" + "\n".join("  " + r for r in rows))
        st.summary = "v%d, %d patches: %s" % (rev, M, "all pass" if not st.failed
                                             else "%d check(s) failed" % st.failed)
        st.details = {"revision": rev, "patches": M, "tree": tid, "rows": rows}
    return st.exit_code


def _review_args(p):
    p.add_argument("mbox", nargs="?", help="the thread, as saved from a mail client")
    p.add_argument("--stages", nargs="*", default=[s for s, a in REVIEW_STAGES],
                   help="stages to run on the applied thread (default: %(default)s)")


# ------------------------------------------------------------ trailers
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
    with Stage(ws, "trailers", "b4 trailers -u -m %s in %s, export to series/" % (
            args.mbox, ws.tree)) as st:
        if not args.mbox:
            raise StageError("name the replies: make trailers MBOX=FILE")
        msgs = read_mbox(args.mbox)
        if st.dirty:
            raise StageError("%s has uncommitted edits: commit them first" % ws.tree)
        before = [git(ws.tree, "log", "-1", "--format=%B", c) for c in T.patches(ws.tree)]
        res = run(["b4", "--offline-mode", "--no-stdin", "trailers", "-u", "-m",
                   args.mbox], cwd=ws.tree, capture=True, check=False, label="b4 trailers")
        out = (res.stdout + res.stderr).strip()
        print("\n".join("  | " + ln for ln in out.splitlines()))
        if res.returncode:
            raise StageError("b4 trailers -u failed (exit %d), nothing changed" % res.returncode)
        after = [git(ws.tree, "log", "-1", "--format=%B", c) for c in T.patches(ws.tree)]
        changed = sum(a != b for a, b in zip(after, before))
        for who, subj, nak in comments(msgs):
            print("  %s from %s: %s" % ("NAK" if nak else "comment to answer", who, subj))
        if changed and T.stage_export(ws, args):
            raise StageError("the trailers are in the tree, the export failed")
        st.passed = 1 + changed
        st.details = {"commits_changed": changed, "comments": comments(msgs)}
        st.summary = "%d commit(s) got trailers%s; %d reply(ies) to answer" % (
            changed, ", series/ exported" if changed else "", len(st.details["comments"]))
    return st.exit_code


def _mbox_arg(p):
    p.add_argument("mbox", nargs="?", help="the replies, an mbox file")


COMMANDS = {
    "review": ("a maintainer's view of MBOX: b4 am on a fresh base, lint, range-diff, stages",
               _review_args, stage_review),
    "trailers": ("b4 trailers -u -m MBOX in the tree, then export to series/; replies to answer",
                 _mbox_arg, stage_trailers),
}
