#!/usr/bin/env python3
"""make trailers MBOX=FILE: the trailers of review replies onto the tree's
commits. Called by tools/trailers (banner, verdict and export there).

A reply to the cover letter gives its trailers to every patch, a reply to a
patch to that patch: matched by In-Reply-To/References against the
Message-IDs of the recorded postings (cover-letter/posted/vN.mbox; a reply
to a reply counts for what that one answered), else by its subject. A
posted patch is the tree commit of the same subject. A trailer already in
the commit is not added again. Replies without trailers and any NAK are
listed as comments to answer, with the quoted lines they answer.

Everything is checked before anything changes: a file that is not an mbox,
a reply to an unknown message, a malformed trailer line stop it with the
tree untouched. The new commits are built first (same trees, authors and
dates) and the branch is moved once, at the end (git update-ref with the
old value).

Environment: WS, TREE, COVER_DIR, RESULTS (trailers.json).
"""
import email.utils
import json
import mailbox
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import posting  # noqa: E402
from posting import Fail, unfold  # noqa: E402

TREE = os.environ["TREE"]
RESULTS = posting.RESULTS
KEYS = ["Reviewed-by", "Acked-by", "Tested-by", "Reported-by", "Suggested-by"]
# A line that means to be one of KEYS: any case, "-" or " ", with a colon,
# or without one but with an address ("Acked-by Serge serge at example.org");
# "Tested by booting it on arm64" is prose, not a trailer.
LOOSE = re.compile(r"^\s*(reviewed|acked|tested|reported|suggested)[- ]by"
                   r"(\s*:.*|\s+.*(<|@|\sat\s).*)$", re.I)
STRICT = re.compile(r"^(%s):\s+(\S[^<>]*\S) <([^<>@\s]+@[^<>@\s]+\.[^<>@\s]+)>$"
                    % "|".join(KEYS), re.I)
CANONICAL = {k.lower(): k for k in KEYS}
# A NAK: a Nacked-by: trailer, or a line of the reply's own that opens with
# NAK/NACK ("NAK, this breaks ..."); not "this is not a NAK".
NAK = re.compile(r"(?i:^\s*nack(ed)?-by:)|^\s*(NAK|NACK)\b")
# Any trailer already in a commit message.
TRAILER = re.compile(r"(?i)^[a-z-]+-by:\s*")


def git(*args, **kw):
    return posting.git(TREE, *args, **kw)


def read_mbox(path):
    try:
        with open(path, "rb") as f:
            head = f.read(5)
    except OSError as e:
        raise Fail("cannot read %s: %s" % (path, e))
    if head != b"From ":
        raise Fail("%s is not an mbox (no 'From ' separator line at its start)" % path)
    msgs = list(mailbox.mbox(path))
    for i, m in enumerate(msgs, 1):
        if not m.get("From") or not m.get("Message-ID"):
            raise Fail("%s: message %d has no %s header: not a mail" % (
                path, i, "From:" if not m.get("From") else "Message-ID:"))
    return msgs


def mid(value):
    return str(value or "").strip().strip("<>").strip()


def posted_ids():
    """Message-ID -> (revision, n, M, subject) of every recorded posting."""
    ids = {}
    for rev in posting.posted_revisions():
        for p, m in posting.numbered(posting.posted(rev)):
            ids[mid(m.get("Message-ID"))] = (rev,) + p
    return ids


def commits():
    """[(sha, subject, message)] of base..HEAD, oldest first."""
    base = posting.base_commit(TREE)
    out = git("log", "--reverse", "--format=%H%x00%s%x00%B%x01", "%s..HEAD" % base)
    recs = [rec.lstrip("\n") for rec in out.split("\x01")]
    return base, [tuple(rec.split("\x00", 2)) for rec in recs if rec]


def own_and_quoted(text):
    """The reply's own lines (signature dropped) and the lines it quotes."""
    own, quoted = [], []
    for line in text.split("\n"):
        if line == "-- ":
            break
        if line.lstrip().startswith(">"):
            quoted.append(line)
        elif not re.match(r"^On .* wrote:$", line):
            own.append(line)
    return own, quoted


def target(m, ids, replies, subjects, depth=0):
    """What reply M answers: "cover", a commit subject, or None."""
    chain = [mid(m.get("In-Reply-To"))] + list(reversed(
        [mid(x) for x in str(m.get("References", "")).split()]))
    for x in chain:
        if x in ids:
            rev, n, M, subj = ids[x]
            return "cover" if n == 0 else subj
        if x in replies and depth < 20 and replies[x] is not m:
            t = target(replies[x], ids, replies, subjects, depth + 1)
            if t:
                return t
    # by subject: "Re: [PATCH v2 3/7] yama: x"
    s = re.sub(r"(?i)^((re|aw|sv|fwd?):\s*)+", "", unfold(m.get("Subject", "")))
    p = posting.parse_subject(s)
    if p:
        if p[0] == 0:
            return "cover"
        if p[2] in subjects:
            return p[2]
    return None


def collect(msgs, ids, tree_commits):
    """(additions {subject: [trailer]}, comments, errors) from the replies."""
    subjects = [c[1] for c in tree_commits]
    replies = {mid(m.get("Message-ID")): m for m in msgs}
    adds, comments, errors = {}, [], []
    for m in msgs:
        frm, subj = unfold(m.get("From", "")), unfold(m.get("Subject", ""))
        where = "%s (From: %s, Subject: %s)" % (mid(m.get("Message-ID")), frm, subj)
        if posting.parse_subject(subj):
            continue  # a patch of the thread itself, not a reply
        t = target(m, ids, replies, subjects)
        if t is None:
            errors.append("reply %s answers no message of the recorded postings "
                          "(cover-letter/posted/) and no patch of the tree" % where)
            continue
        if t != "cover" and t not in subjects:
            errors.append("reply %s is about \"%s\", which is no commit of the tree" % (where, t))
            continue
        own, quoted = own_and_quoted(posting.message_text(m))
        found = []
        for line in own:
            lo = LOOSE.match(line)
            if not lo:
                continue
            st = STRICT.match(line.strip())
            if not st:
                errors.append("reply %s: malformed trailer line %r (want \"Key-by: Name "
                              "<address>\")" % (where, line.strip()))
                continue
            key, name, addr = st.groups()
            found.append("%s: %s <%s>" % (CANONICAL[key.lower()], name, addr))
        text = [l for l in own if l.strip() and not LOOSE.match(l)]
        nak = any(NAK.search(l) for l in own)
        if nak or (not found and text):
            comments.append({"patch": "the cover letter (all patches)" if t == "cover" else t,
                             "from": frm, "message_id": mid(m.get("Message-ID")), "nak": nak,
                             "quoted": quoted[:12], "says": text[:12],
                             "trailers_not_taken": found if nak else []})
        if nak:
            continue  # a reply that NAKs gives no trailer: answer it first
        for tr in found:
            for s in (subjects if t == "cover" else [t]):
                adds.setdefault(s, []).append(tr)
    return adds, comments, errors


def trailer_key(line):
    k, _, v = line.partition(":")
    return k.strip().lower(), email.utils.parseaddr(v)[1].lower()


def new_message(body, trailers):
    """BODY with TRAILERS at the end of its trailer block, before trailing
    Link: lines, so that Co-developed-by/Signed-off-by pairs stay together
    (in a block of their own when it has none)."""
    lines = body.rstrip("\n").split("\n")
    if not re.match(r"^[A-Za-z-]+: ", lines[-1]):
        lines.append("")
        return "\n".join(lines + trailers) + "\n"
    i = len(lines)
    while i > 0 and lines[i - 1].startswith("Link:"):
        i -= 1
    return "\n".join(lines[:i] + trailers + lines[i:]) + "\n"


def main():
    if len(sys.argv) != 2 or not sys.argv[1]:
        raise Fail("name the replies: make trailers MBOX=FILE")
    msgs = read_mbox(sys.argv[1])
    if not os.path.isdir(os.path.join(TREE, ".git")):
        raise Fail("no tree at %s; run make tree" % TREE)
    branch = git("symbolic-ref", "-q", "HEAD", check=False).strip()
    if not branch:
        raise Fail("%s is not on a branch (detached HEAD): check out the series' branch" % TREE)
    if git("status", "--porcelain", "--untracked-files=no").strip():
        raise Fail("%s has uncommitted changes: commit them first" % TREE)
    ids = posted_ids()
    base, tree_commits = commits()
    adds, comments, errors = collect(msgs, ids, tree_commits)
    if errors:
        raise Fail("nothing changed in the tree; the replies have %d problem(s):\n%s" % (
            len(errors), "\n".join("  - " + e for e in errors)))
    # What is new for each commit (not in it already, not twice).
    plan, skipped = [], []
    for sha, subj, body in tree_commits:
        have = {trailer_key(l) for l in body.split("\n") if TRAILER.match(l)}
        new = []
        for tr in adds.get(subj, []):
            k = trailer_key(tr)
            if k in have:
                skipped.append("%s: %s" % (subj, tr))
                continue
            have.add(k)
            new.append(tr)
        plan.append((sha, subj, body, new))
    added = [(subj, tr) for sha, subj, body, new in plan for tr in new]
    head = git("rev-parse", "HEAD").strip()
    if added:
        parent = base
        for sha, subj, body, new in plan:
            info = git("log", "-1", "--format=%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd",
                       "--date=raw", sha).rstrip("\n").split("\x00")
            env = dict(zip(["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
                            "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                            "GIT_COMMITTER_DATE"], info))
            msg = new_message(body, new) if new else body
            parent = git("commit-tree", sha + "^{tree}", "-p", parent, "-F", "-", inp=msg,
                         env=env).strip()
        git("update-ref", "-m", "make trailers: %d trailer(s)" % len(added), branch, parent, head)
    for subj, tr in added:
        key, _, who = tr.partition(":")
        print("  added  %-16s %s  <- %s" % (key, who.strip(), subj))
    for s in skipped:
        print("  already there: %s" % s)
    for c in comments:
        print("  %s from %s on %s:" % ("NAK" if c["nak"] else "comment to answer", c["from"],
                                        c["patch"]))
        for q in c["quoted"]:
            print("      " + q)
        for s in c["says"]:
            print("    | " + s)
        for tr in c.get("trailers_not_taken", []):
            print("    not taken (the reply NAKs): " + tr)
    naks = sum(c["nak"] for c in comments)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "trailers.json"), "w") as f:
        json.dump({"mbox": os.path.abspath(sys.argv[1]), "added": [
            {"patch": s, "trailer": t} for s, t in added], "already_present": skipped,
            "comments": comments, "naks": naks}, f, indent=1)
    print("  %d trailer(s) added to %d commit(s), %d already there; %d comment(s) to answer, "
          "%d NAK" % (len(added), len({s for s, t in added}), len(skipped), len(comments), naks))
    # tools/trailers exports when something was added
    posting.write(os.path.join(RESULTS, "trailers.added"), "%d\n" % len(added))
    return 0


if __name__ == "__main__":
    posting.cli("trailers", main)
