"""A posted thread as an mbox (Python's mailbox): its [PATCH n/M]
messages, their text, and b4 am / git am of it."""
import mailbox
import re
import shutil

from .ws import COMMITTER, SCRATCH, StageError, git, run

SUBJ = re.compile(r"^\[(?:PATCH|RFC)(?: ([^\]]*?))? ?(\d+)/(\d+)\] *(.*)$")


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
    """The messages of the mbox PATH; a file that is no mbox is refused."""
    try:
        with open(path, "rb") as f:
            if f.read(5) != b"From ":
                raise StageError("%s is not an mbox (no 'From ' line at its start)" % path)
    except OSError as e:
        raise StageError("cannot read %s: %s" % (path, e))
    return list(mailbox.mbox(path, create=False))


def write_mbox(msgs, path):
    """MSGS into the mbox PATH, Subject: unfolded (b4 0.12's am -m crashes on a folded one)."""
    box = mailbox.mbox(path)
    box.clear()
    for m in msgs:
        m.replace_header("Subject", unfold(m["Subject"]))
        box.add(m)
    box.close()


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
    res = run(["b4", "--offline-mode", "--no-stdin", "am", "-m", mbox, "-o", outdir],
              cwd=cwd, env=SCRATCH, capture=True, check=False, label="b4 am")
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
