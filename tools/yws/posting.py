"""The posting of each series: b4 send -o from its b4 prep branch into
out/posting/NAME/vN/, with what the workspace adds: the cover letter
composed from cover-letter/NAME/ with a Testing section written only from
results of this very tree, the proof (git am of the threads onto a fresh
base gives the series' tree), the lint of the thread, and the range-diff
against the last posted revision. make send sends these very messages."""
import email.utils
import hashlib
import json
import os
import re
import shutil
import textwrap

from . import cover, prep, results, sender, thread as TH
from .cover import posted, changelog, read
from .deps import base_commit
from .ws import SCRATCH, StageError, Stage, b4, git, run, shared_clone

# The Testing section's stages, each with the command line its result must have
TESTED = {"series-check": ["series-check"], "kunit": ["kunit"],
          "selftests": ["selftests", "default"]}
OPTIONAL = {"series-check-sysctl-whole": ["series-check", "--sysctl-whole"],
            "check-debug": ["check-debug"], "vfs-diff": ["vfs-diff"]}
REF = re.compile(r"\[\[([^\[\]]+)\]\]")
LSM_LIST = "linux-security-module@vger.kernel.org"
REQUIRED_LISTS = [(re.compile(r"^fs/"), "linux-fsdevel@vger.kernel.org"),
                  (re.compile(r"^(security/|include/linux/(lsm_hook_defs|security)\.h$)"),
                   LSM_LIST),
                  (re.compile(r"^security/selinux/"), "selinux@vger.kernel.org")]
FIXES = re.compile(r"^Fixes: [0-9a-f]{12,40} \(\"[^\n]+\"\)$")
MAX_PATCHES = 15


def fill(text, indent="  ", first=""):
    return textwrap.fill(text, width=72, initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False)


# ------------------------------------------------------------ freshness
def fresh_results(ws):
    """{stage: result} that hold for the tree as it is (results.fresh):
    all of TESTED (the selftests' with the default boot) or the posting
    stops, naming each stale stage and why; OPTIONAL ones when fresh."""
    recs, stale = {}, []
    for s, argv in {**TESTED, **OPTIONAL}.items():
        rec, why = results.fresh(ws, s, argv)
        if rec:
            recs[s] = rec
        elif s in TESTED:
            stale.append("%s (%s)" % (s, why))
    if stale:
        raise StageError("no result that holds for this tree: %s; run make (or make %s)"
                         % ("; ".join(stale), " ".join(s.split()[0] for s in stale)))
    return recs


def label(argv):
    """How the Testing section names a stage: its command line, its help line."""
    from .__main__ import commands
    return "`yws %s`: %s" % (" ".join(argv), commands()[argv[0]][0])


def testing_section(recs, tree_id, whole):
    """The Testing section: every result is of tree TREE_ID, the base with
    WHOLE (the series stacked up to the top one)."""
    out = [fill("Testing (by the workspace; every result below is of tree %s, the base with "
                "%s; series-check builds and checks each of its patches on its own):"
                % (tree_id[:12], whole), ""), ""]
    for s in {**TESTED, **OPTIONAL}:
        r = recs.get(s)
        if r:
            out.append(fill("- %s: %d passed, %d failed%s, in %ds: %s." % (
                label(r["argv"]), r["passed"], r["failed"],
                ", %d skipped" % r["skipped"] if r["skipped"] else "", r["seconds"],
                r["summary"].rstrip("."))))
    return "\n".join(out)


# ------------------------------------------------------------ the cover
def resolve_refs(text, subjects):
    """[[part of a subject]] -> "N/M", the one patch whose subject has it
    (an exact subject wins); none or several stop the posting."""
    def one(m):
        ref = " ".join(m.group(1).split()).lower()
        hits = [i for i, s in enumerate(subjects, 1) if s.lower() == ref] or \
            [i for i, s in enumerate(subjects, 1) if ref in s.lower()]
        if len(hits) != 1:
            raise StageError("the cover letter names the patch [[%s]], which matches %s of: %s"
                             % (m.group(1), "several" if hits else "none",
                                "; ".join(subjects)))
        return "%d/%d" % (hits[0], len(subjects))
    return REF.sub(one, text)


def rewrap_entries(text):
    """Each "- " entry of a changelog refilled to 72 columns."""
    entries = []
    for ln in text.splitlines():
        if ln.startswith("- "):
            entries.append([ln[2:].strip()])
        elif ln.startswith("  ") and ln.strip() and entries and isinstance(entries[-1], list):
            entries[-1].append(ln.strip())
        else:
            entries.append(ln)
    return "\n".join(e if isinstance(e, str) else fill(" ".join(e), "  ", "- ")
                     for e in entries)


def thread_of(path):
    return TH.numbered(TH.read_mbox(path))


def cover_msgid(path):
    for p in thread_of(path):
        if p[0] == 0:
            return p[4].get("Message-ID", "").strip().strip("<>")
    raise StageError("%s has no cover letter 0/N" % path)


def changes_section(ws, name, rev, subjects):
    """Changes in vN ... v2, newest first, each with a link to the revision
    before it; [[...]] of an older changelog names that revision's patches."""
    parts = []
    for r in range(rev, 1, -1):
        body = read(changelog(ws, name, r)) or "- EDITME: describe what changed since v%d." % (r - 1)
        if REF.search(body):
            subj = subjects if r == rev else [p[3] for p in thread_of(posted(ws, name, r)) if p[0]]
            body = rewrap_entries(resolve_refs(body, subj))
        link = "\n- Link to v%d: https://lore.kernel.org/r/%s" % (
            r - 1, cover_msgid(posted(ws, name, r - 1))) if posted(ws, name, r - 1).exists() else ""
        parts.append("Changes in v%d:\n%s%s" % (r, body, link))
    return "\n\n".join(parts)


BELOW = "This series applies on top of:\n  %s\n  https://lore.kernel.org/r/%s"
PREREQ = re.compile(r"(?m)^This series applies on top of:\n.*\n +https://\S+/r/(\S+)$")


def below_section(below):
    """What @@BELOW@@ becomes: the series this one applies on, posted
    before it, by subject and link (make review applies it first). Not a
    "prerequisite-message-id: <id>" line: b4 0.12 reads that as a trailer
    and puts the Message-ID on Cc."""
    return "\n\n".join(BELOW % (d["subject"], d["msgid"]) for d in below)


def compose_cover(ws, name, rev, subjects, testing, below):
    """cover-letter/NAME/cover.txt: "#" lines dropped, @@TESTING@@, @@BELOW@@
    and @@CHANGES@@ filled in, [[...]] numbered (a paragraph opening with
    one refilled)."""
    text = cover.cover_text(ws, name) + "\n"
    for ph in ["@@TESTING@@"] + ["@@BELOW@@"] * bool(below):
        if ph not in text:
            raise StageError("cover-letter/%s/cover.txt has no %s placeholder" % (name, ph))
    changes = changes_section(ws, name, rev, subjects)
    text = text.replace("@@TESTING@@", testing).replace("@@BELOW@@", below_section(below))
    text = text.replace("@@CHANGES@@", changes) if "@@CHANGES@@" in text else \
        text.rstrip() + "\n\n" + changes
    paras = []
    for para in text.split("\n\n"):
        if para.startswith("[["):
            words = resolve_refs(para, subjects).split()
            para = fill(" ".join(words), " " * max(4, len(words[0]) + 1))
        paras.append(para)
    text = re.sub(r"\n{3,}", "\n\n", resolve_refs("\n\n".join(paras), subjects)).strip() + "\n"
    bad = [ln for ln in text.splitlines() if "EDITME" in ln]
    if bad:
        raise StageError("the cover letter still has EDITME: %s" % bad[0].strip())
    return text


# ------------------------------------------------------------ b4
def cover_message(tree):
    """The text of the cover commit of the checked-out series, without b4's tracking."""
    return git(tree, "log", "-1", "--format=%B", prep.cover_commit(tree)).split(prep.MARK)[0]


def put_cover(ws, name, rev, text, work):
    """TEXT into b4's cover commit of b4/NAME (checked out): b4 prep
    --force-revision, --edit-cover (the editor copies TEXT), --auto-to-cc
    (get_maintainer.pl). A cover edited since the workspace wrote it (b4
    prep --edit-cover) is not overwritten: its text lives in cover-letter/."""
    tree, mine = ws.tree, ws.tree / ".git" / ("yws-cover-" + name)
    if mine.exists() and mine.read_text() != cover_message(tree):
        raise StageError(
            "the cover commit of b4/%s was edited after the posting wrote it (b4 prep "
            "--edit-cover?); the cover text lives in cover-letter/%s/cover.txt and changes/: "
            "carry the edit there, then rm %s and make again (git -C %s show b4/%s~%d shows it)"
            % (name, name, mine, tree, name, len(prep.layout(tree)[-1][2])))
    if prep.tracking(tree, prep.cover_commit(tree))["revision"] != rev:
        b4(tree, "prep", "--force-revision", str(rev))
    (work / "cover.txt").write_text(text)
    b4(tree, "prep", "--edit-cover", env={
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.editor",
        "GIT_CONFIG_VALUE_0": "cp %s" % (work / "cover.txt")})
    if (tree / "scripts" / "get_maintainer.pl").exists():  # else b4 adds nothing
        b4(tree, "prep", "--auto-to-cc")
    mine.write_text(cover_message(tree))


def send(ws, outdir):
    """b4 send -o OUTDIR (writes, never sends); "[PATCH RFC" becomes "[RFC
    PATCH", as the spec names it; OUTDIR/thread.mbox: the messages with
    "From " lines, Subject: unfolded (b4 0.12's am -m crashes on a folded one)."""
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    b4(ws.tree, "send", "--no-sign", "-o", outdir)
    emls = sorted(outdir.glob("*.eml"))
    if not emls:
        raise StageError("b4 send -o wrote no message")
    with open(outdir / "thread.mbox", "wb") as mb:
        for p in emls:
            head, sep, body = p.read_bytes().partition(b"\n\n")
            head = re.sub(rb"(?im)^(Subject:.*?)((?:\n[ \t]+.*)+)$",
                          lambda m: m.group(1) + re.sub(rb"\n[ \t]+", b" ", m.group(2)), head)
            head = re.sub(rb"(?m)^(Subject: *)\[PATCH RFC\b", rb"\1[RFC PATCH", head)
            p.write_bytes(head + sep + body)
            mb.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n")
            for ln in (head + sep + body).splitlines(keepends=True):
                mb.write(b">" + ln if re.match(rb"^>*From ", ln) else ln)
            mb.write(b"\n")
    return len(emls)


# ------------------------------------------------------------ the proof
def touched(text):
    return sorted(set(re.findall(r"(?m)^diff --git a/\S+ b/(\S+)", text)))


def proof(ws, threads, tree_id, work):
    """git am of THREADS (as b4 am gives them) onto a fresh base: its tree
    must be TREE_ID. The base is a shared clone of the tree, checked out
    sparsely (only the files the threads touch): seconds, not minutes."""
    d = work / "proof"
    shutil.rmtree(d, ignore_errors=True)
    shared_clone(ws.tree, d, "refs/proof/tip")
    files = {f for t in threads for p in thread_of(t) for f in touched(TH.text(p[4]))}
    git(d, "sparse-checkout", "set", "--no-cone", *("/" + f for f in sorted(files)))
    git(d, "checkout", "-q", "--detach", "base")
    for t in threads:
        TH.git_am(d, TH.b4_am(t, work / "am", d))
    got = git(d, "rev-parse", "HEAD^{tree}")
    n = int(git(d, "rev-list", "--count", "base..HEAD"))
    names = " + ".join(t.parent.parent.name + "/" + t.parent.name for t in threads)
    if got != tree_id:
        raise StageError("git am of %s onto the base gives tree %s, the series' is %s" % (
            names, got[:12], tree_id[:12]))
    return "git am of the %d patches of %s onto base %s (as b4 am gives them) = tree %s" % (
        n, names, base_commit(d)[:12], got[:12])


# ------------------------------------------------------------ lint
def fixes_problems(msg):
    return ["%r is not Fixes: <12+ hex digits> (\"subject\")" % ln.strip()
            for ln in re.findall(r"(?mi)^fixes:.*$", msg) if not FIXES.match(ln.rstrip())]


def lint(pats, rev, ident=None, cover_text=""):
    """Checks of a thread [(n, M, rev, subject, message)]: [(name, verdict,
    detail)], verdict pass, fail or warn. COVER_TEXT: the cover as composed,
    whose To:/Cc: lines b4 moved into the headers."""
    res = []
    check = lambda name, bad, good: res.append((name, "fail" if bad else "pass",
                                                "; ".join(bad) or good))
    M = pats[0][1]
    cover = next((p[4] for p in pats if p[0] == 0), None)
    prefixes = {re.sub(r" *\d+/\d+$", "", re.match(r"^\[([^\]]*)\]", TH.unfold(
        p[4]["Subject"])).group(1)) for p in pats}
    check("format", [w for w, bad in [
        ("no cover letter 0/%d" % M, cover is None),
        ("numbered %s, not 0..%d" % ([p[0] for p in pats], M),
         [p[0] for p in pats] != list(range(0 if cover else 1, M + 1))),
        ("subject prefixes differ: %s" % sorted(prefixes), len(prefixes) != 1),
        ("%d patches, more than %d" % (M, MAX_PATCHES), M > MAX_PATCHES)] if bad],
        "cover + %d patches, [%s n/%d]" % (M, prefixes.pop(), M))
    cid = cover and cover.get("Message-ID", "").strip()
    check("headers", ["%d/%d: no %s" % (p[0], M, h) for p in pats
                      for h in ("From", "To", "Subject", "Message-ID") if not p[4].get(h)] +
          ["%d/%d is not a reply to the cover" % (p[0], M) for p in pats
           if cover and p[0] and p[4].get("In-Reply-To", "").strip() != cid],
          "From/To/Subject/Message-ID on each; patches thread under the cover")
    texts = {p[0]: TH.text(p[4]) for p in pats}
    msgs = {n: t.split("\n---\n")[0] for n, t in texts.items()}
    if cover is not None:
        have = {a.lower() for _, a in email.utils.getaddresses(
            cover.get_all("To", []) + cover.get_all("Cc", []))}
        want = {a.lower() for _, a in email.utils.getaddresses(
            re.findall(r"(?mi)^(?:To|Cc): *(.+)$", msgs[0] + "\n" + cover_text))}
        files = {f for t in texts.values() for f in touched(t)}
        want |= {lst for rx, lst in REQUIRED_LISTS for f in files if rx.search(f)}
        check("recipients", ["the cover is not to %s" % a for a in sorted(want - have)],
              "the cover's own Cc: lines and the lists of the touched paths are on it")
    bad = []
    for p in pats[1 if cover else 0:]:
        inbody = re.match(r"^From: *(.+)$", texts[p[0]].lstrip("\n").split("\n", 1)[0])
        author = email.utils.parseaddr(inbody.group(1) if inbody else p[4]["From"])[1]
        sobs = {a.lower() for _, a in email.utils.getaddresses(
            re.findall(r"(?mi)^Signed-off-by: *(.+)$", msgs[p[0]]))}
        if author.lower() not in sobs:
            bad.append("%d/%d: the author <%s> does not sign off" % (p[0], M, author))
        bad += ["%d/%d: %s" % (p[0], M, w) for w in fixes_problems(msgs[p[0]])]
    check("trailers", bad, "every author signs off; Fixes: as submitting-patches.rst")
    if cover is not None:
        check("changelog", ["no \"Changes in v%d:\" in the cover" % rev]
              if rev > 1 and "Changes in v%d:" % rev not in texts[0] else [],
              "Changes in v%d present" % rev if rev > 1 else "v1: no changelog")
    check("editme", ["%d/%d still has EDITME" % (n, M) for n, t in texts.items()
                     if "EDITME" in t or "EDITME" in str(pats[0][4]["Subject"])], "no EDITME")
    if ident:
        why = sender.placeholder_reasons(ident[1])
        res.append(("sender", "warn" if why else "pass", "%s <%s>%s" % (
            ident[0], ident[1], ": a placeholder, NOT SENDABLE (%s)" % "; ".join(why)
            if why else "")))
    return res


# ------------------------------------------------------------ range-diff
def range_diff(ws, name, old_rev, new_mbox, out, work):
    """b4 diff -m of the posted vOLD_REV of series NAME and NEW_MBOX into OUT.
    b4 rebuilds each revision on the blobs its patches name, from the tree's
    objects: vN's base's are added from posted/vN.preimage.tar.xz (no old
    base needs to be installed)."""
    pre, tmp = posted(ws, name, old_rev, "preimage.tar.xz"), work / "preimage"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if pre.exists():
        run(["tar", "-xJf", pre, "-C", tmp], label="tar")
        git(ws.tree, "hash-object", "-w", "--no-filters", "--stdin-paths",
            input="".join("%s\n" % p for p in tmp.rglob("*") if p.is_file()))
    out.unlink(missing_ok=True)
    b4(work, "diff", "-g", ws.tree, "-m", posted(ws, name, old_rev), new_mbox, "-o", out,
       env=SCRATCH, label="b4 diff")
    if not out.exists() or not out.stat().st_size:
        raise StageError("b4 diff -m v%d.mbox %s wrote nothing" % (old_rev, new_mbox))
    return out


def preimage_files(mbox):
    """The base's files a posted thread modifies (not those it creates)."""
    seen, out = set(), []
    for p in sorted(thread_of(mbox), key=lambda p: p[0]):
        for f, blob in re.findall(r"(?m)^diff --git a/\S+ b/(\S+)\n(?:.*\n)*?index ([0-9a-f]+)\.\.",
                                  TH.text(p[4]) if p[0] else ""):
            if f not in seen and set(blob) != {"0"}:
                out.append(f)
            seen.add(f)
    return out


# ------------------------------------------------------------ stages
def post_series(ws, name, recs, ident, below, work):
    """Post series NAME (its branch checked out): its details."""
    tree = ws.tree
    tip = git(tree, "rev-parse", "b4/" + name)
    tree_id = git(tree, "rev-parse", tip + "^{tree}")
    rev = cover.current_revision(ws, name, tree_id)
    outdir = ws.out / "posting" / name / ("v%d" % rev)
    thread = outdir / "thread.mbox"
    if posted(ws, name, rev).exists():      # sent: the series above cite it as it went out
        cov = thread_of(posted(ws, name, rev))[0][4]
        print("  %s v%d: posted already (%s)" % (name, rev, posted(ws, name, rev)))
        return {"name": name, "revision": rev, "dir": str(outdir), "thread": posted(ws, name, rev),
                "tree": tree_id, "commits": [], "msgid": cover_msgid(posted(ws, name, rev)),
                "subject": TH.unfold(cov["Subject"]), "lint": []}
    if (outdir / "sent").exists():        # other messages now would be another posting
        print("  %s v%d: partly sent, kept as proven (make send sends the rest; %s lists "
              "what went out)" % (name, rev, outdir / "sent"))
        return {**json.loads((outdir / "posting.json").read_text()), "thread": thread}
    ch, prev = read(changelog(ws, name, rev)), read(posted(ws, name, rev - 1, "tree"))
    if rev > 1 and (ch or "").startswith(cover.NO_CHANGE) and prev != tree_id:
        raise StageError("%s changed since v%d but %s says no change: describe it (the "
                         "posting's range-diff shows what changed)" % (
                             name, rev - 1, changelog(ws, name, rev)))
    commits = prep.layout(tree, tip)[-1][2]
    subjects = [git(tree, "log", "-1", "--format=%s", c) for c in commits]
    whole = " + ".join(prep.names(ws))
    testing = testing_section(recs, recs["kunit"]["tree"], whole if whole == name else
                              "%s (these patches come first; the tests are in the series "
                              "on top)" % whole)
    with prep.on_branch(tree, name):
        put_cover(ws, name, rev, compose_cover(ws, name, rev, subjects, testing, below), work)
        print("  %s: b4 send -o %s: %d messages" % (name, outdir, send(ws, outdir)), flush=True)
        series = git(tree, "rev-list", "--reverse", "base..b4/" + name).split()
    shutil.copyfile(work / "cover.txt", outdir / "cover.txt")
    shutil.copyfile(cover.cover_dir(ws, name) / "cover.txt", outdir / "cover.template.txt")
    lines = [proof(ws, [b["thread"] for b in below] + [thread], tree_id, work)]
    checks = lint(thread_of(thread), rev, ident, read(outdir / "cover.txt") or "")
    if rev > 1:
        rd = range_diff(ws, name, rev - 1, thread, outdir / ("range-diff-v%d.txt" % (rev - 1)),
                        work)
        lines.append("range-diff against v%d: %s" % (rev - 1, rd))
    lines += ["lint %-10s %-4s %s" % c for c in checks]
    (outdir / "proof.txt").write_text("posting %s v%d of tree %s\n%s\n" % (
        name, rev, tree_id, "\n".join(lines)))
    print("\n".join("  " + ln for ln in lines))
    d = {"name": name, "revision": rev, "dir": str(outdir), "tree": tree_id,
         "commits": series, "msgid": cover_msgid(thread), "sha256": {
             p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in outdir.glob("*.eml")},
         "subject": TH.unfold(
             thread_of(thread)[0][4]["Subject"]), "lint": [dict(zip(("name", "verdict", "detail"),
                                                                     c)) for c in checks]}
    (outdir / "posting.json").write_text(json.dumps(d, indent=1) + "\n")
    return {**d, "thread": thread}


def stage_posting(ws, args):
    ident = sender.identity(ws)
    with Stage(ws, "posting") as st:
        if st.dirty:
            files = git(ws.tree, "status", "--porcelain").splitlines()
            raise StageError("the tree has uncommitted edits (%s): b4 posts commits; commit "
                             "them (git commit --fixup / rebase -i) first" % ", ".join(
                                 ln.split(None, 1)[-1] for ln in files[:4]))
        recs = fresh_results(ws)
        prep.configure(ws, ws.tree)
        prep.restack(ws, ws.tree)
        done = []
        for name in prep.names(ws):
            done.append(post_series(ws, name, recs, ident, done, ws.dir("posting")))
        fails = [c for d in done for c in d["lint"] if c["verdict"] == "fail"]
        st.passed = sum(1 + len(d["lint"]) + (d["revision"] > 1) for d in done) - len(fails)
        st.failed = len(fails)
        st.details = {"series": [{**d, "thread": str(d["thread"])} for d in done],
                      "sendable": sender.sendable(ident)}
        st.summary = "%s, proven%s" % (", ".join("%s v%d" % (d["name"], d["revision"])
                                                for d in done), "" if sender.sendable(ident)
                                       else "; placeholder sender: NOT SENDABLE")
    if sender.warning(ident):
        print(sender.warning(ident))
    return st.exit_code


def record(ws, d):
    """Keep the posting D of one series as posted (cover-letter/NAME/posted/);
    vN.mbox, which makes vN posted, is written last."""
    name, rev, thread = d["name"], d["revision"], d["thread"]
    posted(ws, name, rev).parent.mkdir(parents=True, exist_ok=True)
    posted(ws, name, rev, "tree").write_text(d["tree"] + "\n")
    shutil.copyfile(d["dir"] + "/cover.template.txt", posted(ws, name, rev, "cover.txt"))
    git(ws.tree, "-c", "tar.tar.xz.command=xz -9 -c", "archive", "--format=tar.xz",
        "-o", posted(ws, name, rev, "preimage.tar.xz"),
        prep.layout(ws.tree, "b4/" + name)[-1][0] + "^", "--", *preimage_files(thread))
    cur, nxt = changelog(ws, name, rev), changelog(ws, name, rev + 1)
    if REF.search(read(cur) or ""):
        subjects = [p[3] for p in thread_of(thread) if p[0]]
        cur.write_text(rewrap_entries(resolve_refs(read(cur), subjects)) + "\n")
    if not nxt.exists():
        nxt.parent.mkdir(parents=True, exist_ok=True)
        nxt.write_text("%s v%d yet.\n" % (cover.NO_CHANGE, rev))
    shutil.copyfile(thread, str(posted(ws, name, rev)) + ".new")
    os.rename(str(posted(ws, name, rev)) + ".new", posted(ws, name, rev))
    return "%s v%d recorded (cover <%s>); the next posting is v%d: commit cover-letter/" % (
        name, rev, d["msgid"], rev + 1)


def unposted(ws):
    """The series of the fresh posting whose revision is not recorded, in order."""
    rec, why = results.fresh(ws, "posting")
    if not rec:
        raise StageError("no posting that holds for this tree (%s): make posting first" % why)
    return [d for d in rec["details"]["series"]
            if not posted(ws, d["name"], d["revision"]).exists()]


COMMANDS = {
    "posting": ("each series: cover-letter/NAME/ + b4 send -o -> out/posting/NAME/vN/, "
                "proven (git am = the tree), linted, range-diffed", None, stage_posting),
}
