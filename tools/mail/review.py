#!/usr/bin/env python3
"""A maintainer's view of a posted thread (make review MBOX=FILE); called
by tools/review, which runs the stages in between.

  review.py prepare MBOX   read the thread (the workspace's thread.mbox or a
                           mail client's save), normalize it, b4 am -m it
  review.py apply          git am of b4's patches onto the review tree's base
  review.py lint           the series lint of posting.py on the applied thread
  review.py range-diff     b4 diff -m against the earlier recorded revision
  review.py summary        the closing screen, and $MAIN_RESULTS/review.json

Environment: WS, REVIEW_DIR (its own folder, e.g. build/review), TREE (the
review tree, REVIEW_DIR/linux), RESULTS (REVIEW_DIR/results: the verdicts of
the stages run on it), MAIN_RESULTS (build/results), COVER_DIR.
State between the calls: REVIEW_DIR/state.json.
"""
import email.generator
import email.policy
import io
import json
import mailbox
import os
import re
import sys
import tempfile

REVIEW_DIR = os.environ["REVIEW_DIR"]
os.environ.setdefault("POSTING_WORK", os.path.join(REVIEW_DIR, "posting"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import posting  # noqa: E402
from posting import Fail, run_rc, indent, unfold, rel, write  # noqa: E402

TREE = os.environ["TREE"]
RESULTS = os.environ.get("RESULTS", os.path.join(REVIEW_DIR, "results"))
STATE = os.path.join(REVIEW_DIR, "state.json")
AM_DIR = os.path.join(REVIEW_DIR, "am")
NORM = os.path.join(AM_DIR, "thread.mbox")
GIT_ID = posting.git_identity("review")
SUBJ = re.compile(r"^\[(PATCH|RFC)(?: ([^\]]*?))? ?(\d+)/(\d+)\] *(.*)$")


def git(*args, **kw):
    return posting.git(TREE, *args, **kw)


def state(update=None):
    s = {}
    if os.path.exists(STATE):
        with open(STATE) as f:
            s = json.load(f)
    if update:
        s.update(update)
        with open(STATE, "w") as f:
            json.dump(s, f, indent=1)
    return s


def read_thread(path, data):
    """The messages of DATA, the mbox PATH with CRLF undone, folded headers
    undone too: [(n, M, revision, subject, message)] for the patches and the
    cover, [message] for the rest (replies). Raises Fail on what cannot be a
    posted thread."""
    if not data.startswith(b"From "):
        raise Fail("%s is not an mbox: it does not start with a 'From ' separator line "
                   "(save the whole thread as mbox; one .eml needs a 'From ' line first)" % path)
    with tempfile.NamedTemporaryFile(dir=REVIEW_DIR, suffix=".mbox", delete=False) as f:
        f.write(data)
    try:
        msgs = list(mailbox.mbox(f.name, factory=lambda fp: email.message_from_binary_file(
            fp, policy=email.policy.compat32)))
    finally:
        os.unlink(f.name)
    patches, other = [], []
    for i, m in enumerate(msgs, 1):
        for k in set(m.keys()):
            vals = m.get_all(k)
            del m[k]
            for v in vals:
                m[k] = unfold(v)
        subj = m.get("Subject", "")
        p = SUBJ.match(subj)
        if p and not re.match(r"(?i)^(re|aw|sv|fwd?):", subj):
            rev = re.search(r"\bv(\d+)\b", p.group(2) or "")
            patches.append((int(p.group(3)), int(p.group(4)), int(rev.group(1)) if rev else 1,
                            p.group(5), m))
        elif not m.get("From") and not m.get("Subject"):
            raise Fail("%s: message %d has neither From: nor Subject: (not a mail)" % (path, i))
        else:
            other.append(m)
    if not patches:
        raise Fail("%s holds no patch ([PATCH ... n/M] subject): %d message(s) read" % (
            path, len(msgs)))
    revs = sorted({p[2] for p in patches})
    if len(revs) > 1:
        raise Fail("%s mixes revisions %s: save one revision's thread" % (
            path, ", ".join("v%d" % r for r in revs)))
    totals = sorted({p[1] for p in patches})
    if len(totals) > 1:
        raise Fail("%s: the patches disagree on M in n/M (%s)" % (path, totals))
    M = totals[0]
    seen = {}
    for p in patches:
        if p[0] in seen and seen[p[0]][4].get_payload() != p[4].get_payload():
            raise Fail("%s has two different messages numbered %d/%d" % (path, p[0], M))
        seen.setdefault(p[0], p)
    missing = [n for n in range(1, M + 1) if n not in seen]
    if missing:
        raise Fail("%s lacks patch%s %s of %d: the thread is incomplete" % (
            path, "es" if len(missing) > 1 else "",
            ", ".join("%d/%d" % (n, M) for n in missing), M))
    return [seen[n] for n in sorted(seen)], other


def write_mbox(msgs, path):
    with open(path, "wb") as f:
        for m in msgs:
            buf = io.BytesIO()
            email.generator.BytesGenerator(buf, mangle_from_=True, maxheaderlen=0).flatten(m)
            f.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n" + buf.getvalue().rstrip(b"\n")
                    + b"\n\n")


def prepare(path):
    os.makedirs(AM_DIR, exist_ok=True)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Fail("cannot read %s: %s" % (path, e))
    raw = data.replace(b"\r\n", b"\n")
    thread, other = read_thread(path, raw)
    notes = []
    M, rev = thread[-1][1], thread[-1][2]
    cover = thread[0] if thread[0][0] == 0 else None
    cover_text = posting.message_text(cover[4]) if cover else ""
    cid = re.search(r"(?m)^change-id: *(\S+)", cover_text)
    if not cover:
        notes.append("no cover letter (0/%d) in the thread: the patches are reviewed alone, "
                     "and without a change-id there is no range-diff" % M)
    # The order the file had, for the note: patches sorted by n for git am.
    raw_order = [int(x) for x in re.findall(rb"(?m)^Subject: \[(?:PATCH|RFC)[^\]]*? (\d+)/\d+\]",
                                            raw)]
    if raw_order != sorted(raw_order):
        notes.append("the patches were out of order in the file (%s): sorted by n/M" % (
            " ".join(map(str, raw_order))))
    if b"\r\n" in data[:65536]:
        notes.append("CRLF line ends: converted")
    if re.search(rb"(?m)^[A-Za-z-]+:.*\n[ \t]+\S", raw.split(b"\n\n", 1)[0] + b"\n"):
        notes.append("folded headers: unfolded (b4 0.12 crashes on a folded Subject:)")
    write_mbox([p[4] for p in thread] + other, NORM)
    # b4 am, as a maintainer applies a thread (offline, from the file).
    b4out = os.path.join(AM_DIR, "b4")
    os.makedirs(b4out, exist_ok=True)
    for f in os.listdir(b4out):
        os.unlink(os.path.join(b4out, f))
    rc, out = run_rc(posting.b4("am", "-m", NORM, "-o", b4out), cwd=b4out, env=GIT_ID,
                     check=False)
    mbx = sorted(f for f in os.listdir(b4out) if f.endswith(".mbx"))
    if rc or not mbx:
        raise Fail("b4 am -m %s gave no patches (exit %d):\n%s" % (path, rc, indent(out.strip())))
    got = len(mailbox.mbox(os.path.join(b4out, mbx[0])))
    if got != M:
        raise Fail("b4 am -m took %d patches from the thread, it announces %d:\n%s" % (
            got, M, indent(out.strip())))
    # The cover's subject, else patch 1's.
    st = {"mbox": os.path.abspath(path), "revision": rev, "patches": M, "cover": bool(cover),
          "subject": thread[0][3], "change_id": cid.group(1) if cid else None,
          "notes": notes,
          "subjects": [p[3] for p in thread if p[0] > 0],
          "b4_mbx": os.path.join(b4out, mbx[0]), "applies": None}
    if cover:
        ch = re.search(r"(?ms)^(Changes in v%d:.*?)(?:\n\n|\n---\n|\Z)" % rev, cover_text)
        st["changes"] = ch.group(1).strip() if ch else None
    state(st)
    print("  v%d, %d patches%s, b4 am -m: %s" % (rev, M, "" if cover else " (no cover letter)",
                                                 os.path.relpath(st["b4_mbx"], REVIEW_DIR)))
    for n in notes:
        print("  note: " + n)


def apply():
    st = state()
    base = posting.base_commit(TREE)

    def reset():
        git("am", "--abort", check=False)
        git("checkout", "-q", "-f", "-B", "yama", base)

    reset()
    rc, out = run_rc(["git", "-C", TREE, "am", "-q", st["b4_mbx"]], env=GIT_ID, check=False)
    done = int(git("rev-list", "--count", base + "..HEAD").strip())
    if rc:
        reset()
        n = done + 1
        where = re.findall(r"(?m)^error: (.*)$", out)
        st = state({"applies": False, "failed_patch": n, "base": base,
                    "apply_error": "; ".join(where[:3])})
        print("  DOES NOT APPLY at patch %d/%d \"%s\" on base %s (%d applied before it):\n%s" % (
            n, st["patches"], st["subjects"][n - 1], base[:12], done, indent(out.strip())))
        return 1
    tip = git("rev-parse", "HEAD^{tree}").strip()
    # tools/tree's bookkeeping: these commits are the review's, not unexported work.
    write(os.path.join(TREE, ".git", "yama-synced"), git("rev-parse", "HEAD"))
    state({"applies": True, "base": base, "tip_tree": tip})
    print("  applies: %d patches on base %s -> tree %s" % (done, base[:12], tip[:12]))
    return 0


def lint_stage():
    st = state()
    res = posting.lint(posting.numbered(NORM), TREE, st["base"], meant_to_send=True)
    problems = posting.write_lint(res, os.path.join(RESULTS, "lint.json"))
    verdict(res, "lint")
    return 1 if problems else 0


def verdict(res, name):
    """A NAME.verdict of the review folder, for the summary (stage_end's format)."""
    ok = sum(v == "pass" for n, v, d in res)
    bad = sum(v == "fail" for n, v, d in res)
    os.makedirs(RESULTS, exist_ok=True)
    write(os.path.join(RESULTS, name + ".verdict"),
          "%s\t%s\t%d\t%d\t0\n" % (name, "fail" if bad else "pass", ok, bad))


def previous_revision(st):
    """The earlier recorded revision of the same change-id: (N, None) or
    (None, why not)."""
    if not st.get("change_id"):
        return None, "no change-id (no cover letter, or b4 did not write one)"
    try:
        ours = posting.change_id()
    except Fail:
        ours = None
    if st["change_id"] != ours:
        return None, "change-id %s is not this workspace's (%s)" % (st["change_id"], ours)
    older = [r for r in posting.posted_revisions() if r < st["revision"]]
    if not older:
        return None, "no revision before v%d is recorded in %s/posted" % (
            st["revision"], os.path.relpath(posting.COVER_DIR, posting.WS))
    return older[-1], None


def range_diff_stage():
    st = state()
    old, why = previous_revision(st)
    if old is None:
        print("  no range-diff: " + why)
        state({"range_diff": None, "range_diff_why": why})
        return 0
    os.makedirs(posting.WORK, exist_ok=True)
    out_file = os.path.join(REVIEW_DIR, "range-diff-v%d.txt" % old)
    problems = posting.range_diff(old, NORM, out_file)
    if problems:
        print("error: " + "\n".join(problems), file=sys.stderr)
        state({"range_diff": None, "range_diff_why": "b4 diff -m failed"})
        return 1
    body = open(out_file).read()
    # b4's own pairs, then the pairs the file adds by subject (posting.py):
    # each of those is one changed patch, not one dropped and one new.
    b4part, _, extra = body.partition("\nPatches b4 left unpaired")
    c = {k: len(re.findall(r"(?m)^\s*(?:\d+|-):\s+\S+ %s " % re.escape(k), b4part))
         for k in "=!<>"}
    paired = extra.count("\n### ")
    counts = {"=": c["="], "!": c["!"] + paired, "<": c["<"] - paired, ">": c[">"] - paired}
    state({"range_diff": out_file, "range_diff_old": old, "range_diff_counts": counts})
    print(body, end="")
    return 0


def read_verdict(name):
    path = os.path.join(RESULTS, name + ".verdict")
    if not os.path.exists(path):
        return None
    f = open(path).read().rstrip("\n").split("\t")
    return {"verdict": f[1], "passed": int(f[2]), "failed": int(f[3])}


def summary(stages):
    st = state()
    rows = []
    line = lambda k, v: rows.append("%-12s %s" % (k + ":", v))
    line("thread", st.get("mbox", "?"))
    line("revision", "v%d%s" % (st.get("revision", 0), "  (change-id %s)" % st["change_id"]
                                if st.get("change_id") else ""))
    line("subject", st.get("subject", "?"))
    line("patches", "%s%s" % (st.get("patches", "?"), "" if st.get("cover")
                              else "  (no cover letter)"))
    if st.get("applies"):
        line("applies", "yes, on base %s (%s)" % (st["base"][:12], rel(TREE, posting.WS)))
    elif st.get("applies") is False:
        line("applies", "NO: patch %d/%d \"%s\" does not apply (%s)" % (
            st["failed_patch"], st["patches"], st["subjects"][st["failed_patch"] - 1],
            st.get("apply_error", "")))
    else:
        line("applies", "not tried")
    bad = st.get("applies") is not True
    out = {"stages": {}}
    # (label, its REVIEW_STAGES name, its verdict file)
    for label, stage, vname in [("gates", "gates", "series-check"), ("lint", "lint", "lint"),
                                ("kunit", "kunit", "kunit"),
                                ("kselftests", "selftests", "selftests")]:
        ran = stage in stages and bool(st.get("applies"))
        v = read_verdict(vname) if ran else None
        if v:
            line(label, "%s (%d passed, %d failed)" % (v["verdict"], v["passed"], v["failed"]))
            bad |= v["verdict"] != "pass"
        elif ran:
            line(label, "no verdict (stage died)")
            bad = True
        else:
            line(label, "not run" + ("" if st.get("applies") else " (does not apply)"))
        out["stages"][label] = v
    if not st.get("applies"):
        line("since", "not compared (the thread does not apply)")
    elif "range-diff" not in stages:
        line("since", "range-diff not run (REVIEW_STAGES)")
    elif st.get("range_diff"):
        c = st["range_diff_counts"]
        line("since v%d" % st["range_diff_old"],
             "%d unchanged, %d changed, %d new, %d dropped (b4 diff -m: %s)" % (
                 c["="], c["!"], c[">"], c["<"], rel(st["range_diff"], posting.WS)))
    else:
        line("since", "no range-diff: %s" % st.get("range_diff_why", "not made"))
    if st.get("changes"):
        rows += ["  " + l for l in st["changes"].splitlines()[:8]]
    for n in st.get("notes", []):
        rows.append("note: " + n)
    print("== review summary")
    for r in rows:
        print("  " + r)
    out.update({k: st.get(k) for k in ("mbox", "revision", "patches", "cover", "applies",
                                       "failed_patch", "change_id", "range_diff_old",
                                       "range_diff_counts", "notes")})
    out["verdict"] = "fail" if bad else "pass"
    mr = os.environ.get("MAIN_RESULTS") or RESULTS
    os.makedirs(mr, exist_ok=True)
    with open(os.path.join(mr, "review.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 1 if bad else 0


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    os.makedirs(REVIEW_DIR, exist_ok=True)
    os.makedirs(posting.WORK, exist_ok=True)
    steps = {"apply": apply, "lint": lint_stage, "range-diff": range_diff_stage}
    if cmd == "prepare" and len(sys.argv) == 3:
        return prepare(sys.argv[2]) or 0
    if cmd in steps:
        return steps[cmd]()
    if cmd == "summary":
        return summary(sys.argv[2].split() if len(sys.argv) > 2 else [])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    posting.cli("review", main)
