#!/usr/bin/env python3
"""The posting of the series with b4 0.12, and its proof. Called by
tools/posting (banner and verdict there).

  posting.py            build $OUT/posting/vN/ (*.eml + thread.mbox), verify
  posting.py --verify   only the proof, on the last $OUT/posting/vN/
  posting.py --record   store $OUT/posting/vN/thread.mbox as the posted
                        revision (cover-letter/posted/vN.mbox); next is vN+1
  posting.py --range-diff  b4 diff -m of the last posted revision against
                        the posting (or series/ when there is none yet)

Nothing is ever sent: the b4 tree's sendemail.smtpserver is a local script
(tools/mail/local-sendmail) that only appends to an mbox under build/, and
`b4 send -o DIR` does not even call it.

Environment: WS, BUILD, OUT, TREE, RESULTS, SENDER_NAME, SENDER_EMAIL,
SENDER_SOURCE (from lib.sh, which has them from tools/identity; without
them posting.py asks tools/identity itself); SERIES_DIR (default $WS/series);
B4_CONFIG (default $WS/.b4-config); COVER_DIR (default $WS/cover-letter);
POSTING_OUT (default $OUT/posting); POSTING_WORK (default $BUILD/posting).
"""

import email
import email.policy
import email.utils
import hashlib
import json
import mailbox
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
import series  # noqa: E402  (tools/series.py)

WS, BUILD, OUT, TREE, RESULTS, SERIES_DIR = series.workspace()
B4_CONFIG = os.environ.get("B4_CONFIG") or os.path.join(WS, ".b4-config")
COVER_DIR = os.environ.get("COVER_DIR") or os.path.join(WS, "cover-letter")
POST_OUT = os.environ.get("POSTING_OUT") or os.path.join(OUT, "posting")
WORK = os.environ.get("POSTING_WORK") or os.path.join(BUILD, "posting")
PTREE = os.path.join(WORK, "linux")
HERE = os.path.dirname(os.path.abspath(__file__))
IDENTITY = os.path.join(os.path.dirname(HERE), "identity")


def identity():
    """(name, email, source) of the sender: as tools/posting exported them
    through lib.sh, else from tools/identity (the one place that decides it:
    SENDER=, git config, placeholder)."""
    if os.environ.get("SENDER_NAME") and os.environ.get("SENDER_EMAIL"):
        return (os.environ["SENDER_NAME"], os.environ["SENDER_EMAIL"],
                os.environ.get("SENDER_SOURCE", "env"))
    out = subprocess.run([IDENTITY, "--shell"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    v = dict(shlex.split(l)[0].split("=", 1) for l in out.splitlines() if "=" in l)
    return v["SENDER_NAME"], v["SENDER_EMAIL"], v["SENDER_SOURCE"]


def placeholder():
    """The placeholder identity, (name, email), from tools/identity."""
    return email.utils.parseaddr(subprocess.run(
        [IDENTITY, "--placeholder"], stdout=subprocess.PIPE, universal_newlines=True,
        check=True).stdout.strip())


SENDER_NAME, SENDER_EMAIL, SENDER_SOURCE = identity()
BRANCH = "b4/yama-lsm"
MAGIC = "--- b4-submit-tracking ---"
TESTING_MARK = "@@TESTING@@"
CHANGES_MARK = "@@CHANGES@@"
B4 = os.environ.get("B4", "b4")
T0 = time.time()


class Fail(Exception):
    pass


def cli(name, main):
    """Run MAIN as the program NAME (posting, review, trailers): its return
    value is the exit status; a Fail is "error: NAME: ..." and status 1."""
    try:
        sys.exit(main())
    except Fail as e:
        print("error: %s: %s" % (name, e), file=sys.stderr)
        sys.exit(1)


def progress(msg):
    print("  [%3ds] %s" % (time.time() - T0, msg), flush=True)


def run(cmd, cwd=None, env=None, inp=None, check=True, what=None):
    return run_rc(cmd, cwd, env, inp, check, what)[1]


def run_rc(cmd, cwd=None, env=None, inp=None, check=True, what=None):
    e = dict(os.environ, LC_ALL="C.UTF-8")
    e.update(env or {})
    p = subprocess.run(cmd, cwd=cwd, env=e, input=inp, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, errors="replace")
    if check and p.returncode:
        raise Fail("%s failed (exit %d):\n%s" % (what or " ".join(cmd), p.returncode,
                                                 indent(p.stdout.strip()[-3000:])))
    return p.returncode, p.stdout


def indent(text, pre="    | "):
    return "\n".join(pre + l for l in text.splitlines())


def b4(*args):
    """The command line of b4 ARGS, offline and never reading stdin."""
    return [B4, "--offline-mode", "--no-stdin"] + list(args)


def git_identity(name):
    """A git identity NAME <NAME@localhost> for one command: config and
    committer. b4 0.12's am exits 1 without a word after `git mailinfo`
    when git config has no user.name/user.email (a machine with no
    identity: the placeholder case)."""
    addr = name + "@localhost"
    return {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "user.name",
            "GIT_CONFIG_VALUE_0": name, "GIT_CONFIG_KEY_1": "user.email",
            "GIT_CONFIG_VALUE_1": addr, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": addr}


def git(tree, *args, **kw):
    return run(["git", "-C", tree] + list(args), **kw)


def pgit(*args, **kw):
    return git(PTREE, *args, **kw)


def base_commit(tree=None):
    """The commit of TREE's (default: the tree's) tag base."""
    tree = tree or TREE
    base = git(tree, "rev-parse", "--verify", "-q", "refs/tags/base^{commit}",
               check=False).strip()
    if not base:
        raise Fail("%s has no tag 'base'; run make tree" % tree)
    return base


def clone_ptree():
    """WORK/linux, the b4 tree: a clone of the tree sharing its objects."""
    if not os.path.isdir(os.path.join(PTREE, ".git")):
        progress("cloning %s -> %s (shared objects, one checkout)" % (TREE, PTREE))
        os.makedirs(WORK, exist_ok=True)
        run(["git", "clone", "-q", "--shared", "--no-checkout", TREE, PTREE])


def unfold(value):
    """A header's value on one line, white space folded."""
    return " ".join(str(value).split())


def rel(path, root):
    """PATH relative to ROOT when it is below it, else PATH."""
    return os.path.relpath(path, root) if path.startswith(root) else path


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def series_list():
    path = os.path.join(SERIES_DIR, "series")
    if not os.path.exists(path):
        raise Fail("no %s: nothing to post" % path)
    names = series.patch_names(SERIES_DIR)
    if not names:
        raise Fail("series/series lists no patch: nothing to post")
    return names


# ------------------------------------------------------------- revisions
def posted(rev, ext="mbox"):
    """cover-letter/posted/vREV.EXT, kept by --record."""
    return os.path.join(COVER_DIR, "posted", "v%d.%s" % (rev, ext))


def changelog(rev):
    """cover-letter/changes/vREV.txt, what changed in vREV."""
    return os.path.join(COVER_DIR, "changes", "v%d.txt" % rev)


def posted_revisions():
    d = os.path.join(COVER_DIR, "posted")
    fns = os.listdir(d) if os.path.isdir(d) else []
    return sorted(int(m.group(1)) for m in map(re.compile(r"^v(\d+)\.mbox$").match, fns) if m)


def series_messages(names=None):
    """The commit messages of series/ (each patch file up to its "---"),
    hashed: trailers and rewordings change it, the code does not."""
    h = hashlib.sha1()
    for name in names if names is not None else series_list():
        with open(os.path.join(SERIES_DIR, name), encoding="utf-8", errors="replace") as f:
            h.update(f.read().split("\n---\n", 1)[0].encode())
    return h.hexdigest()


def unchanged_since_posted(tree):
    """The last recorded revision N when the series (its TREE) and the cover
    letter are still those of vN, else None. The one place that compares the
    workspace with the recorded posting: a series identical to vN is not a
    new revision. The cover counts as changed when cover.txt differs from
    the copy --record kept (posted/vN.cover.txt; none for older records) or
    changes/vN+1.txt says more than the "No change since" stub."""
    revs = posted_revisions()
    if not revs or not tree:
        return None
    n = revs[-1]
    messages, kept = read(posted(n, "messages")), read(posted(n, "cover.txt"))
    ch = read(changelog(n + 1))
    if (read(posted(n, "tree")) != tree
            or messages is not None and messages != series_messages()
            or kept is not None and kept != read(os.path.join(COVER_DIR, "cover.txt"))
            or ch and not ch.startswith(NO_CHANGE)):
        return None
    return n


NO_CHANGE = "- No change since"


def current_revision(tree=None):
    """The revision being prepared: vN+1 after the last recorded vN, or vN
    itself when TREE (the series' tree) and the cover are unchanged."""
    revs = posted_revisions()
    return unchanged_since_posted(tree) or (revs[-1] + 1 if revs else 1)


def cover_msgid(mbox_path):
    for msg in mailbox.mbox(mbox_path):
        subj = unfold(msg.get("Subject", ""))
        if re.search(r"\[PATCH[^\]]* 0+/\d+\]", subj):
            return msg.get("Message-ID", "").strip().strip("<>")
    raise Fail("%s has no cover letter (0/N)" % mbox_path)


# ------------------------------------------------------------- the cover
def load_json(name):
    path = os.path.join(RESULTS, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fill(text, indent="  ", first="", hyphens=False, **kw):
    """TEXT filled to 72 columns, as the entries of the cover's lists."""
    return textwrap.fill(text, width=72, initial_indent=first, subsequent_indent=indent,
                         break_on_hyphens=hyphens, **kw)


def cases(k):
    """The number of cases of a KUnit summary, each counted once."""
    return sum(k.get(c, 0) for c in ("passed", "failed", "crashed", "skipped"))


def kunit_lines(kj):
    """The KUnit entry from build/results/kunit.json as tools/kunit writes
    it ({"default": {passed, failed, crashed, skipped, suites: {...}}}, the
    tree's security/yama/.kunitconfig): each case counted once."""
    k = kj.get("default") if isinstance(kj, dict) else None
    if not isinstance(k, dict):
        return ["- KUnit: not run in this workspace."]
    suites = {n: cases(v) for n, v in k.get("suites", {}).items()}
    bad = [k.get(c, 0) for c in ("failed", "crashed", "skipped")]
    return [fill("- KUnit (`make kunit`: kunit.py run --arch=x86_64 --kunitconfig=security/yama under QEMU): %d cases in %d suites (%s), %s." % (
        sum(suites.values()), len(suites),
        ", ".join("%s %d" % nv for nv in sorted(suites.items())),
        "NOT all passed: %d failed, %d crashed, %d skipped" % tuple(bad) if any(bad)
        else "all passed"))]


def selftests_lines(sj):
    """The kselftest entries from build/results/selftests.json as
    tools/selftests writes it ({scenarios: {name: {cmdline, pass, fail,
    skip, counts?}}}): one line per boot, the differential test's counts."""
    scen = sj.get("scenarios") if isinstance(sj, dict) else None
    if not isinstance(scen, dict) or not scen:
        return ["- kselftests: not run in this workspace."]
    out = ["- kselftests (`make selftests`: tools/testing/selftests/yama, one",
           "  QEMU boot per scenario; passed/failed/skipped):"]
    diff = None
    for name, v in scen.items():
        # The harness's own parameters say nothing about the scenario.
        extra = " ".join(w for w in v.get("cmdline", "").split()
                         if w.split("=")[0] not in ("console", "panic", "rdinit",
                                                    "kunit.enable")
                         and not w.startswith(("selftests.", "vfsdiff.")))
        out.append(fill("- %s: %d/%d/%d%s" % (
            name, v.get("pass", 0), v.get("fail", 0), v.get("skip", 0),
            " (%s)" % extra if extra else ""), "    ", "  ", break_long_words=False))
        diff = v.get("counts", {}).get("vfs_diff") or diff
    if diff:
        out.append(fill(
            "- Differential test (selftests/vfs-diff, the vfs-diff boot): seed %s, %s cases of symlink follows and hardlinks, each run with only the VFS's rule on (fs.protected_*=1) and with only Yama's (kernel.yama.*=1): %s agree, %s disagree. Another seed: `make vfs-diff VFSDIFF_SEED=N`." % (
                diff.get("seed"), diff.get("cases"), diff.get("agree"),
                diff.get("disagree"))))
    return out


def debug_lines(dj, tip_tree):
    """The debug kernel's entry from build/results/check-debug.json as
    tools/check-debug writes it (kselftests, stress and bad input of the
    debug boot, KUnit at boot, the tree it tested)."""
    if not isinstance(dj, dict) or ("kunit" not in dj and "stopped" not in dj):
        return ["- Debug kernel (lockdep, PROVE_RCU, KASAN: `make check-debug`):",
                "  not run in this workspace."]
    stale = "" if dj.get("tip_tree") == tip_tree and not dj.get("tree_edited") \
        else " (NOTE: for another state of the series)"
    if "kunit" not in dj:
        return [fill("- Debug kernel (`make check-debug`)%s: FAILED, the run stopped: %s" % (
            stale, dj["stopped"]))]
    k = dj["kunit"]
    why = []
    failed = dj.get("failed", 0) + k.get("failed", 0) + k.get("crashed", 0)
    if failed:
        why.append("%d case(s) failed" % failed)
    if dj.get("problems"):
        why.append("%d kernel report(s) or problem(s)" % len(dj["problems"]))
    if dj.get("gates_rc"):
        why.append("the SYSCTL=n build failed")
    if dj.get("verdict") != "pass" and not why:
        why.append("the run did not finish")
    text = "- Debug kernel (`make check-debug`)%s: lockdep, PROVE_RCU, KASAN, KFENCE, DEBUG_OBJECTS, panic_on_warn=1, one boot: %d KUnit cases and %d kselftest, stress and bad-input cases (%d skipped), %s." % (
        stale, cases(k), dj.get("cases", 0), dj.get("skipped", 0),
        "FAILED: " + ", ".join(why) if why else "all passed")
    st = dj.get("stress")
    if st:
        text += " Stress: %d operations, %d decisions judged, %d wrong." % (
            st.get("operations", 0), st.get("judged", 0), st.get("wrong", 0))
    return [fill(text)]


def testing_section(tip_tree):
    out = ["Testing (generated by the workspace from its last `make check` and",
           "`make check-debug`):", ""]
    sc = load_json("series-check.json")
    if sc:
        stale = "" if sc.get("tip_tree") == tip_tree else \
            " (NOTE: for an earlier state of the series)"
        out.append(fill("- Series gates (`make series-check`)%s: %s cells passed, %s failed over %d patches." % (
            stale, sc.get("passed"), sc.get("failed"), len(sc.get("patches", []))), hyphens=True))
        linker = {"ld.lld": " (gcc, ld.lld)"}.get(sc.get("linker"), "")
        out.append(fill(
            "Each patch applied on the ones before it: checkpatch.pl --strict "
            "--codespell, an x86_64 W=1 build%s with no warning the base did not "
            "have, sparse (C=2) on the files it touches, kernel-doc." % linker,
            first="  ", hyphens=True))
        tip = (sc.get("cells") or {}).get("tip", {})
        names = {"yama=n": "SECURITY_YAMA=n",
                 "sysctl=n": "SYSCTL=n" if sc.get("sysctl_n") != "objects"
                 else "SYSCTL=n (the series' objects only)",
                 "kunit-test=y": "the KUnit test on (the series' objects only)",
                 "rst": "Yama.rst parsed by docutils"}
        gates = sc.get("tip_gates", [])
        done = [names.get(g, g) for g in gates if tip.get(g, {}).get("status") == "pass"]
        bad = [names.get(g, g) for g in gates if tip.get(g, {}).get("status") == "FAIL"]
        if done:
            out.append(fill("The tip built with %s: passed%s." % (
                ", ".join(done), ("; failed: " + ", ".join(bad)) if bad else ""),
                first="  ", hyphens=True))
    else:
        out.append("- Series gates (checkpatch, W=1/sparse builds): not run in this workspace.")
    out += kunit_lines(load_json("kunit.json"))
    out += selftests_lines(load_json("selftests.json"))
    out += debug_lines(load_json("check-debug.json"), tip_tree)
    return "\n".join(out)


def rewrap_entries(text, width=72):
    """Refill each "- " entry of a changelog (continuation lines indented)
    to WIDTH columns, so that entries stay tidy whatever [[...]] became."""
    entries = []
    for line in text.splitlines():
        if line.startswith("- "):
            entries.append([line[2:].strip()])
        elif line.startswith("  ") and line.strip() and entries:
            entries[-1].append(line.strip())
        else:
            entries.append(line if line.strip() else "")
    return "\n".join(e if isinstance(e, str) else textwrap.fill(
        " ".join(e), width=width, initial_indent="- ", subsequent_indent="  ",
        break_long_words=False, break_on_hyphens=False) for e in entries)


def changes_section(rev, subjects=None):
    """Changes in vN ... v2, newest first, each with the link to the
    revision before it (from cover-letter/posted/). [[...]] names a patch
    of the series (resolve_refs) in the newest changelog; in an older one,
    a patch of the revision it was written for, as recorded in
    cover-letter/posted/vR.mbox (the numbers that revision's cover gave)."""
    parts = []
    for r in range(rev, 1, -1):
        path = changelog(r)
        if os.path.exists(path):
            body = read(path)
            if r == rev and REF.search(body):
                body = rewrap_entries(resolve_refs(
                    body, patch_subjects() if subjects is None else subjects))
            elif REF.search(body) and os.path.exists(posted(r)):
                body = rewrap_entries(resolve_refs(body, posted_subjects(r)))
        else:
            body = "- EDITME: describe what changed since v%d (%s missing)." % (
                r - 1, os.path.relpath(path, WS))
        link = "\n- Link to v%d: https://lore.kernel.org/r/%s" % (
            r - 1, cover_msgid(posted(r - 1))) if os.path.exists(posted(r - 1)) else ""
        parts.append("Changes in v%d:\n%s%s" % (r, body, link))
    return "\n\n".join(parts)


REF = re.compile(r"\[\[([^\[\]]+)\]\]")


def posted_subjects(rev):
    """The subjects of the patches of the recorded vREV, in order."""
    return [p[2] for p, _m in sorted(numbered(posted(rev)), key=lambda pm: pm[0][0])
            if p[0] > 0]


def patch_subjects(names=None):
    """The subjects of series/'s patches, in order, without "[PATCH]"."""
    subjects = []
    for name in names or series_list():
        with open(os.path.join(SERIES_DIR, name), "rb") as f:
            msg = email.message_from_binary_file(f, policy=email.policy.default)
        subj = unfold(msg.get("Subject", ""))
        subjects.append(re.sub(r"^(\[[^\]]*\] *)+", "", subj))
    return subjects


def resolve_refs(text, subjects):
    """[[part of a subject]] -> "N/M", N the patch of series/ whose subject
    contains it (case-insensitive; an exact subject wins). So the cover and
    the changelogs name patches by what they are, and stay right when the
    series is reordered; a reference that matches no patch, or several,
    fails the posting."""
    M = len(subjects)

    def one(m):
        ref = " ".join(m.group(1).split()).lower()
        exact = [i for i, s in enumerate(subjects, 1) if s.lower() == ref]
        hits = exact or [i for i, s in enumerate(subjects, 1) if ref in s.lower()]
        if len(hits) != 1:
            raise Fail("the cover letter names the patch [[%s]], which %s of series/:\n%s" % (
                m.group(1), "matches none" if not hits else "matches several",
                "\n".join("    %d/%d %s" % (i, M, s) for i, s in enumerate(subjects, 1))))
        return "%d/%d" % (hits[0], M)
    return REF.sub(one, text)


def compose_cover(rev, tip_tree, subjects=None):
    path = os.path.join(COVER_DIR, "cover.txt")
    if not os.path.exists(path):
        raise Fail("no cover letter: %s" % path)
    text = open(path).read()
    text = "\n".join(l for l in text.splitlines() if not l.startswith("#")) + "\n"
    subject = text.splitlines()[0].strip() if text.strip() else ""
    if not subject.startswith("security: Yama LSM"):
        raise Fail("cover subject must start with 'security: Yama LSM' (got %r)" % subject)
    if TESTING_MARK not in text:
        raise Fail("cover-letter/cover.txt has no %s placeholder" % TESTING_MARK)
    text = text.replace(TESTING_MARK, testing_section(tip_tree))
    ch = changes_section(rev, subjects)
    if CHANGES_MARK in text:
        text = text.replace(CHANGES_MARK, ch)
    elif ch:
        text = text.rstrip() + "\n\n" + ch + "\n"
    if REF.search(text):
        subjects = patch_subjects() if subjects is None else subjects
        # A paragraph that starts with [[...]] describes that patch: "N/M
        # what it does", refilled with a hanging indent once N/M is known.
        paras = []
        for para in text.split("\n\n"):
            if para.startswith("[["):
                words = resolve_refs(para, subjects).split()
                para = fill(" ".join(words), " " * max(4, len(words[0]) + 1),
                            break_long_words=False)
            paras.append(para)
        text = resolve_refs("\n\n".join(paras), subjects)
    text = re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
    if "EDITME" in text:
        line = [l for l in text.splitlines() if "EDITME" in l][0]
        raise Fail("the cover letter still has b4's EDITME placeholder: %s" % line.strip())
    return text


# ------------------------------------------------------------- the b4 tree
def change_id():
    path = os.path.join(COVER_DIR, "change-id")
    if os.path.exists(path):
        return open(path).read().strip()
    raise Fail("no %s (b4's change-id of the series)" % path)


def sender_text(text):
    """A patch (git format-patch) as the sender posts it: where the author
    or a Signed-off-by: is the placeholder identity, the sender's own. Only
    the commit message part is touched (up to the first "---" line). A
    sender that is itself a placeholder (a reserved or no-reply address,
    SENDER_SOURCE "placeholder") is still the sender: only the built-in
    placeholder as the sender leaves the patch as it is."""
    pname, paddr = placeholder()
    if SENDER_EMAIL.lower() == paddr.lower():
        return text
    head, sep, rest = text.partition("\n---\n")
    me = "%s <%s>" % (SENDER_NAME, SENDER_EMAIL)
    head = re.sub(r"(?m)^(From|Signed-off-by|Co-developed-by): *%s *<%s> *$" % (
        re.escape(pname), re.escape(paddr)), lambda m: "%s: %s" % (m.group(1), me), head)
    return head + sep + rest


def as_sender(path, n):
    """sender_text() of the patch file PATH, as a file under WORK/am/."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    new = sender_text(text)
    if new == text:
        return path
    d = os.path.join(WORK, "am")
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "%04d-%s" % (n, os.path.basename(path)))
    with open(out, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(new)
    return out


def prepare_tree(names, rev, cover_text, base):
    """The b4 prep branch of revision REV in the b4 tree; its tree."""
    env_id = {"GIT_AUTHOR_NAME": SENDER_NAME, "GIT_AUTHOR_EMAIL": SENDER_EMAIL,
              "GIT_COMMITTER_NAME": SENDER_NAME, "GIT_COMMITTER_EMAIL": SENDER_EMAIL}
    clone_ptree()
    if pgit("cat-file", "-e", base + "^{commit}", check=False):
        pgit("fetch", "-q", TREE, "refs/tags/base:refs/tags/base")
    cfg = [("user.name", SENDER_NAME), ("user.email", SENDER_EMAIL),
           ("sendemail.smtpserver", os.path.join(HERE, "local-sendmail")),
           ("b4.prep-cover-strategy", "commit"), ("gc.auto", "0"),
           ("core.editor", os.path.join(HERE, "cover-editor"))]
    for k, v in cfg:
        pgit("config", k, v)
    pgit("config", "--unset-all", "sendemail.from", check=False)
    pgit("am", "--abort", check=False)
    progress("b4 prep branch %s from base %s" % (BRANCH, base[:12]))
    pgit("checkout", "-q", "-f", "-B", BRANCH, base)
    pgit("config", "branch.%s.b4-prep-cover-strategy" % BRANCH, "commit")
    # The b4 tree reads .b4-config from its top.
    if not os.path.exists(B4_CONFIG):
        raise Fail("no %s" % B4_CONFIG)
    shutil.copyfile(B4_CONFIG, os.path.join(PTREE, ".b4-config"))
    # The cover commit, as `b4 prep -n` makes it, but with the series' own
    # change-id and revision; its text is then put in with b4 --edit-cover.
    tracking = {"series": {"revision": rev, "change-id": change_id(),
                           "base-branch": None, "prefixes": []}}
    stub = ("EDITME: cover title\n\nEDITME: replaced by tools/posting\n\n"
            "%s\n# This section is used internally by b4 prep for tracking "
            "purposes.\n%s\n" % (MAGIC, json.dumps(tracking, indent=2)))
    pgit("commit", "-q", "--allow-empty", "--no-verify", "-F", "-", inp=stub, env=env_id)
    # The series, applied as a maintainer would (Signed-off-by of the sender
    # added when the sender is not the author).
    for n, name in enumerate(names, 1):
        path = os.path.join(SERIES_DIR, name)
        if not os.path.exists(path):
            raise Fail("series/series names %s, which does not exist" % name)
        path = as_sender(path, n)
        rc, out = run_rc(["git", "-C", PTREE, "am", "-q", "-s",
                          "--committer-date-is-author-date", path], env=env_id, check=False)
        if rc:
            pgit("am", "--abort", check=False)
            raise Fail("patch %d %s does not apply on base + the patches before it:\n%s" % (
                n, name, indent(out.strip())))
    # The cover text, non-interactively: b4 runs core.editor (cover-editor),
    # which copies COVER_TEXT_FILE over the file b4 gives it.
    cover_file = os.path.join(WORK, "cover.txt")
    write(cover_file, cover_text)
    b4env = {"COVER_TEXT_FILE": cover_file, "EDITOR": os.path.join(HERE, "cover-editor")}
    out = run(b4("prep", "--edit-cover"), cwd=PTREE, env=b4env, what="b4 prep --edit-cover")
    progress("b4 prep --edit-cover: %s" % out.strip().splitlines()[-1] if out.strip() else "")
    if os.environ.get("POSTING_NO_AUTO_CC") != "1":
        run(b4("prep", "--auto-to-cc"), cwd=PTREE, what="b4 prep --auto-to-cc")
        progress("b4 prep --auto-to-cc: To/Cc from scripts/get_maintainer.pl")
    return pgit("rev-parse", "HEAD^{tree}").strip()


def write_posting(outdir):
    if os.path.isdir(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    out = run(b4("send", "--no-sign", "-o", outdir), cwd=PTREE, what="b4 send -o")
    emls = sorted(f for f in os.listdir(outdir) if f.endswith(".eml"))
    if not emls:
        raise Fail("b4 send -o wrote no message:\n" + indent(out))
    # One mbox of the thread, cover first ("From " separators added). The
    # Subject: is unfolded there: b4 0.12's `am -m` crashes on a folded
    # Subject: read from a local mbox ("Header values may not contain
    # linefeed"); the .eml files stay as b4 wrote them.
    with open(os.path.join(outdir, "thread.mbox"), "wb") as mb:
        for fn in emls:
            with open(os.path.join(outdir, fn), "rb") as f:
                head, sep, body = f.read().partition(b"\n\n")
            head = re.sub(rb"(?im)^(Subject:.*?)((?:\n[ \t]+.*)+)$",
                          lambda m: m.group(1) + re.sub(rb"\n[ \t]+", b" ", m.group(2)), head)
            data = head + sep + body
            mb.write(b"From mboxrd@z Thu Jan  1 00:00:00 1970\n")
            for line in data.splitlines(keepends=True):
                mb.write(b">" + line if re.match(rb"^>*From ", line) else line)
            mb.write(b"\n" if data.endswith(b"\n") else b"\n\n")
    return emls


# ------------------------------------------------------------- the proof
def numbered(mbox_path):
    """[((n, M, subject), message)] of an mbox's [PATCH n/M] messages."""
    return [(p, m) for m in mailbox.mbox(mbox_path)
            for p in [parse_subject(m.get("Subject", ""))] if p]


def parse_subject(s):
    m = re.match(r"^\[PATCH(?: [^\]]*?)? (\d+)/(\d+)\] (.*)$", unfold(s))
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def verify(outdir, expect_tree=None, expect_n=None, base=None):
    """The proof; returns a list of problems (empty when all good)."""
    problems = []
    mbox_path = os.path.join(outdir, "thread.mbox")
    if not os.path.exists(mbox_path):
        return ["%s missing; run make posting" % mbox_path]
    info = []
    for i, m in enumerate(mailbox.mbox(mbox_path)):
        subj = m.get("Subject", "")
        p = parse_subject(subj)
        where = "message %d (%s)" % (i, unfold(subj)[:60])
        for h in ("From", "To", "Subject", "Message-ID"):
            if not str(m.get(h, "")).strip():
                problems.append("%s: no %s header" % (where, h))
        if not p:
            problems.append("%s: subject is not [PATCH ... n/M]" % where)
            continue
        info.append((p, m))
    if problems:
        return problems
    total = {p[1] for p, m in info}
    if len(total) != 1:
        return ["the messages disagree on M in n/M: %s" % sorted(total)]
    M = total.pop()
    if expect_n is not None and M != expect_n:
        problems.append("the posting has %d patches, the series %d" % (M, expect_n))
    nums = [p[0] for p, m in info]
    if nums != list(range(0, M + 1)):
        problems.append("messages are numbered %s, expected 0..%d in order" % (nums, M))
    cover = next((m for p, m in info if p[0] == 0), None)
    if cover is None:
        return problems + ["no cover letter 0/%d" % M]
    cid = cover["Message-ID"].strip()
    csubj = parse_subject(cover["Subject"])[2]
    if not csubj.startswith("security: Yama LSM"):
        problems.append("cover subject %r does not start with 'security: Yama LSM'" % csubj)
    if "EDITME" in message_text(cover) or "EDITME" in csubj:
        problems.append("the cover letter still contains EDITME")
    if "linux-security-module@vger.kernel.org" not in str(cover.get("To", "")) + \
            str(cover.get("Cc", "")):
        problems.append("the cover is not addressed to linux-security-module@vger.kernel.org")
    for p, m in info:
        if p[0] == 0:
            continue
        irt = str(m.get("In-Reply-To", "")).strip()
        refs = str(m.get("References", "")).split()
        if irt != cid or cid not in refs:
            problems.append("patch %d/%d does not thread under the cover %s "
                            "(In-Reply-To %s)" % (p[0], M, cid, irt or "none"))
    # git am onto the base, detached in the b4 tree (it differs from the
    # b4 branch in the series' files only: a checkout of seconds, where a
    # tree of its own took one of the whole base), then back to where the
    # b4 tree was: the tip's tree, exactly.
    base = base or base_commit()
    clone_ptree()
    vgit = ["git", "-C", PTREE]
    run(vgit + ["am", "--abort"], check=False)
    # (a b4 tree cloned here and never checked out has no index: left so)
    was = os.path.exists(os.path.join(PTREE, ".git", "index")) and (
        pgit("symbolic-ref", "-q", "--short", "HEAD", check=False).strip() or
        pgit("rev-parse", "-q", "--verify", "HEAD", check=False).strip())
    try:
        return verify_at(info, M, cid, vgit, base, mbox_path, expect_tree, problems)
    finally:
        if was:
            run(vgit + ["checkout", "-q", "-f", was])


def verify_at(info, M, cid, vgit, base, mbox_path, expect_tree, problems):
    """The proof's checks that need the patches applied (verify's tail)."""
    run(vgit + ["checkout", "-q", "-f", "--detach", base])
    env = git_identity("verify")
    # git am takes the patches of the thread (the cover 0/M carries none).
    am_input = os.path.join(WORK, "am-input.mbox")
    if os.path.exists(am_input):
        os.unlink(am_input)
    run([sys.executable, os.path.join(HERE, "mbox-patches"), mbox_path, am_input])
    rc, out = run_rc(vgit + ["am", "-q", am_input], env=env, check=False)
    got = None
    if rc:
        run(vgit + ["am", "--abort"], check=False)
        problems.append("git am of thread.mbox onto the base fails:\n" + indent(out.strip()))
    else:
        got = run(vgit + ["rev-parse", "HEAD^{tree}"]).strip()
        napplied = int(run(vgit + ["rev-list", "--count", base + "..HEAD"]).strip())
        if napplied != M:
            problems.append("git am applied %d commits, expected %d" % (napplied, M))
        if expect_tree and got != expect_tree:
            problems.append("git am of thread.mbox gives tree %s, the series tip has %s" % (
                got, expect_tree))
        # The series lint, its To/Cc check among them: what get_maintainer.pl names
        # in the tree the patches give (its MAINTAINERS, as b4 prep --auto-to-cc).
        lint_dir = os.environ.get("POSTING_OUT") and POST_OUT or RESULTS
        problems += write_lint(lint(info, PTREE, base, SENDER_SOURCE != "placeholder"),
                               os.path.join(lint_dir, "posting-lint.json"))
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        out = run(b4("am", "-m", mbox_path, "-o", tmp), cwd=tmp, check=False, env=env)
        mbx = [f for f in os.listdir(tmp) if f.endswith(".mbx")]
        if not mbx:
            problems.append("b4 am -m thread.mbox made no .mbx:\n" + indent(out.strip()))
        else:
            n = sum(1 for _ in mailbox.mbox(os.path.join(tmp, mbx[0])))
            if n != M:
                problems.append("b4 am -m gave %d patches, expected %d" % (n, M))
            if "WARNING" in out and "missing" in out.lower():
                problems.append("b4 am reports missing patches:\n" + indent(out.strip()))
    # The identity: every message From: the sender, every patch signed off
    # by the sender; the placeholder only when it is the sender, and then
    # recorded as not sendable.
    me = SENDER_EMAIL.lower()
    for p, m in info:
        frm = email.utils.parseaddr(str(m.get("From", "")))[1].lower()
        if frm != me:
            problems.append("message %d/%d is From: %s, the sender is %s <%s>" % (
                p[0], M, frm, SENDER_NAME, SENDER_EMAIL))
        if p[0] and not re.search(r"(?mi)^Signed-off-by: .*<%s>\s*$" % re.escape(me),
                                  message_text(m)):
            problems.append("patch %d/%d has no Signed-off-by: of the sender <%s>" % (
                p[0], M, SENDER_EMAIL))
    paddr = placeholder()[1].lower()
    if me != paddr:
        for p, m in info:
            if paddr in m.as_bytes().decode("utf-8", "replace").lower():
                problems.append("message %d/%d still carries the placeholder <%s>" % (
                    p[0], M, paddr))
    if not problems:
        say("proof: %d messages (cover + %d patches), all with From/To/Subject/"
            "Message-ID, threaded under %s" % (M + 1, M, cid))
        say("proof: git am onto base %s -> tree %s%s" % (
            base[:12], got, " = series tip" if expect_tree else ""))
        say("proof: b4 --offline-mode am -m thread.mbox: %d patches" % M)
        say("proof: sender %s <%s> (%s)%s" % (
            SENDER_NAME, SENDER_EMAIL, SENDER_SOURCE,
            ": NOT SENDABLE, a placeholder identity" if SENDER_SOURCE == "placeholder"
            else ", on every From: and Signed-off-by:"))
    return problems


PROOF = []


def say(line):
    """A line of the proof: printed, and kept for PROOF_FILE."""
    print("  " + line)
    PROOF.append(line)


# get_maintainer.pl as b4 prep --auto-to-cc runs it (To: --nol, Cc: --nom;
# both together here).
GET_MAINTAINER_ARGS = ["--nogit", "--nogit-fallback", "--nogit-chief-penguins",
                       "--norolestats"]
# Lists that must be on the cover whenever a patch touches these paths,
# whatever get_maintainer.pl says (a check that does not trust it alone).
REQUIRED_LISTS = [
    (re.compile(r"^fs/"), "linux-fsdevel@vger.kernel.org"),
    (re.compile(r"^(security/|include/linux/(lsm_hook_defs|security)\.h$)"),
     "linux-security-module@vger.kernel.org"),
    (re.compile(r"^security/selinux/"), "selinux@vger.kernel.org"),
]


def addresses(m, headers=("To", "Cc")):
    vals = [str(v) for h in headers for v in (m.get_all(h) or [])]
    return {a.lower() for n, a in email.utils.getaddresses(vals) if a}


def touched_files(text):
    return sorted(set(re.findall(r"(?m)^diff --git a/(\S+) b/", text)))


def get_maintainer(tree, patch_text):
    """The addresses get_maintainer.pl (in TREE) names for a patch. With
    --nogit its answer depends on the patch, the script, MAINTAINERS,
    .mailmap and the script's config files (.get_maintainer.conf and
    .ignore, searched in the tree, $HOME and the tree's .scripts/), which
    key the answer kept under WORK/get_maintainer/: the same inputs do not
    ask perl again (0.4 s per patch). Not in the key: which folders of the
    tree exist (an F: pattern ending in a folder name); the series adds no
    folder that MAINTAINERS names."""
    key = hashlib.sha1()
    for part in [patch_text.encode(), " ".join(GET_MAINTAINER_ARGS).encode()]:
        key.update(hashlib.sha1(part).digest())
    inputs = [os.path.join(tree, n)
              for n in ("scripts/get_maintainer.pl", "MAINTAINERS", ".mailmap")]
    for where in (tree, os.path.expanduser("~"), os.path.join(tree, ".scripts")):
        inputs += [os.path.join(where, n)
                   for n in (".get_maintainer.conf", ".get_maintainer.ignore")]
    for path in inputs:
        try:
            with open(path, "rb") as f:
                key.update(hashlib.sha1(f.read()).digest())
        except OSError:
            key.update(b"-")
    cache = os.path.join(WORK, "get_maintainer", key.hexdigest())
    try:
        with open(cache) as f:
            return set(json.load(f))
    except (OSError, ValueError):
        pass
    with tempfile.NamedTemporaryFile("w", suffix=".patch", dir=WORK, delete=False) as f:
        f.write(patch_text)
    try:
        out = run(["perl", "scripts/get_maintainer.pl"] + GET_MAINTAINER_ARGS + [f.name],
                  cwd=tree, what="get_maintainer.pl")
    finally:
        os.unlink(f.name)
    found = {a.lower() for n, a in email.utils.getaddresses(out.splitlines()) if "@" in a}
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(cache), delete=False) as f:
        json.dump(sorted(found), f)
    os.replace(f.name, cache)
    return found


def check_recipients(info, tree):
    """Every address get_maintainer.pl names for a patch is in that
    patch's To/Cc and in the cover's; the REQUIRED_LISTS are there."""
    problems = []
    if not os.path.exists(os.path.join(tree, "scripts", "get_maintainer.pl")):
        return ["%s has no scripts/get_maintainer.pl: cannot check To/Cc" % tree]
    M = len(info) - 1
    to_cover = addresses([m for p, m in info if p[0] == 0][0])
    union, lists, files_all = set(), set(), []
    for p, m in info:
        if p[0] == 0:
            continue
        text = message_text(m)
        files = touched_files(text)
        files_all += files
        # the sender need not write to themselves (b4 may leave them out)
        want = get_maintainer(tree, text) - {SENDER_EMAIL.lower()}
        union |= want
        miss = sorted(want - addresses(m))
        if miss:
            problems.append("patch %d/%d: get_maintainer.pl names %s for %s, missing "
                            "from its To/Cc" % (p[0], M, ", ".join(miss), ", ".join(files)))
        for rx, lst in REQUIRED_LISTS:
            if any(rx.search(f) for f in files):
                lists.add(lst)
    miss = sorted((union | lists) - to_cover)
    if miss:
        problems.append("the cover's To/Cc lacks %s (get_maintainer.pl for the files "
                        "of the series)" % ", ".join(miss))
    if not problems:
        say("proof: To/Cc = get_maintainer.pl for the %d files the series touches: "
            "%d addresses, all on the cover and on each patch that needs them" % (
                len(set(files_all)), len(union)))
        for lst in sorted(lists):
            say("proof: %s on the cover (the series touches %s)" % (lst, ", ".join(
                sorted({f for f in files_all for rx, l in REQUIRED_LISTS
                        if l == lst and rx.search(f)}))))
    return problems


# ------------------------------------------------------------- series lint
# Named checks of a thread, each with its own verdict, after the patchwork
# checks netdev's CI runs. INFO: [((n, M, subject), message)], the cover
# (n = 0) included when there is one; TREE: a checkout of base + the
# patches (scripts/get_maintainer.pl and scripts/kernel-doc are its own).
MAX_PATCHES = 15
# Fixes: as Documentation/process/submitting-patches.rst writes it: the
# first 12 (or more) characters of the commit id, lowercase as git prints
# it, then the subject in double quotes inside parentheses, one tag a line,
# nothing after it. Only the form: the base tree is a one-commit import of an
# upstream tarball, so no upstream commit id can be looked up in it.
FIXES_RX = re.compile(r"^Fixes: ([0-9a-f]{12,40}) \(\"(.+)\"\)$")
FIXES_FORM = "Fixes: <12+ lowercase hex digits> (\"subject\")"


def fixes_problem(line):
    """Why the line LINE (which starts with "Fixes:" in any case) is not a
    Fixes: tag of the form FIXES_RX; None when it is one. Blanks at the end
    of the line are not "after" the tag."""
    line = line.rstrip()
    if len(re.findall(r"(?i)\bfixes:[ \t]*[0-9a-f]{5,}\b", line)) > 1:
        return "more than one Fixes: on the line (one tag a line)"
    f = FIXES_RX.match(line)
    if f and not re.search(r"\"\)\s", f.group(2)):
        return None
    tag, sp, cid, sp2, rest = re.match(r"(?i)^(fixes:)([ \t]*)(\S*)([ \t]*)(.*)$",
                                       line).groups()
    if tag != "Fixes:":
        return "the tag is spelt %s, not Fixes:" % tag
    if not cid:
        return "no commit id"
    if sp != " ":
        return "not one space after Fixes:"
    if not re.match(r"^[0-9a-fA-F]+$", cid):
        return "the commit id %s is not hexadecimal" % cid
    if cid != cid.lower():
        return "the commit id %s is not lowercase" % cid
    if not 12 <= len(cid) <= 40:
        return "the commit id %s has %d hex digits, not 12 to 40" % (cid, len(cid))
    if not rest:
        return "no (\"subject\") after the commit id"
    if sp2 != " ":
        return "not one space between the commit id and (\"subject\")"
    if not rest.startswith("(\"") or "\")" not in rest[2:]:
        return "the subject is not in double quotes inside parentheses"
    if rest.startswith("(\"\")"):
        return "an empty subject"
    return "text after (\"subject\")"


def message_text(m):
    """The plain text of a message (first text/plain part), LF line ends."""
    for part in m.walk():
        if part.get_content_type() == "text/plain":
            data = part.get_payload(decode=True) or b""
            return data.decode(part.get_content_charset() or "utf-8",
                               "replace").replace("\r\n", "\n")
    return ""


def added_lines(text, suffix):
    """(file, line) for each + line the patch TEXT adds to files ending in SUFFIX."""
    out, cur = [], None
    for line in text.splitlines():
        d = re.match(r"^diff --git a/\S+ b/(\S+)", line)
        if d:
            cur = d.group(1)
        elif cur and cur.endswith(suffix) and line.startswith("+") and \
                not line.startswith("+++"):
            out.append((cur, line[1:]))
    return out


def kdoc_warnings(tree, rev, path):
    """The number of kernel-doc warnings of PATH at REV (None: the worktree)."""
    kd = os.path.join(tree, "scripts", "kernel-doc")
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        f = os.path.join(tree, path)
        if rev:
            rc, data = run_rc(["git", "-C", tree, "show", "%s:%s" % (rev, path)], check=False)
            if rc:
                return 0  # a new file: nothing before
            f = os.path.join(tmp, os.path.basename(path))
            write(f, data)
        elif not os.path.exists(f):
            return 0
        rc, out = run_rc(["perl", kd, "-none", f], check=False)
    return sum(1 for l in out.splitlines() if "warning" in l.lower() or "error" in l.lower())


def checked(name, bad, good):
    """A check's (name, verdict, detail): fail with the problems BAD, else pass."""
    return (name, "fail" if bad else "pass", "; ".join(bad) or good)


def lint(info, tree, base, meant_to_send=True):
    """The checks; returns [(name, verdict, detail)], verdict pass/fail/warn/skip."""
    res = []
    pats = [(p, m) for p, m in info if p[0] > 0]
    texts = {p[0]: message_text(m) for p, m in pats}
    # the commit messages: up to the "---" line
    msgs = {n: t.split("\n---\n")[0] for n, t in texts.items()}
    M = pats[0][0][1] if pats else 0
    has_cover = any(p[0] == 0 for p, m in info)
    bad = []
    if not has_cover:
        bad.append("no cover letter (0/%d)" % M)
    if M > MAX_PATCHES:
        bad.append("%d patches, more than %d in one series" % (M, MAX_PATCHES))
    prefixes = {re.sub(r" *\d+/\d+$", "", re.match(r"^\[([^\]]*)\]", " ".join(
        str(m.get("Subject", "")).split())).group(1)) for p, m in info}
    if len(prefixes) != 1:
        bad.append("subject prefixes differ: %s" % ", ".join("[%s]" % x for x in sorted(prefixes)))
    res.append(("series-format", "fail" if bad else "pass", "; ".join(bad) or
                "cover + %d patches, prefix [%s n/%d]" % (M, prefixes.pop(), M)))
    if os.path.exists(os.path.join(tree, "scripts", "get_maintainer.pl")) and has_cover:
        res.append(checked("cc-maintainers", check_recipients(info, tree),
                           "every address get_maintainer.pl names is in To/Cc"))
    else:
        res.append(("cc-maintainers", "skip", "no scripts/get_maintainer.pl in the tree"
                    if has_cover else "no cover letter"))
    # author and Signed-off-by; the placeholder identity (tools/identity's)
    bad, warn = [], []
    paddr = placeholder()[1].lower()
    for p, m in pats:
        body = texts[p[0]]
        inbody = re.match(r"^From: *(.+)$", body.lstrip("\n").split("\n", 1)[0])
        author = email.utils.parseaddr(inbody.group(1) if inbody else str(m.get("From", "")))
        sobs = {a.lower() for n, a in email.utils.getaddresses(
            re.findall(r"(?mi)^Signed-off-by: *(.+)$", msgs[p[0]]))}
        if author[1].lower() not in sobs:
            bad.append("patch %d/%d: the author <%s> has no Signed-off-by" % (p[0], M, author[1]))
        if paddr in (str(m.get("From", "")) + msgs[p[0]]).lower():
            (bad if meant_to_send else warn).append(
                "patch %d/%d carries the placeholder <%s>" % (p[0], M, paddr))
    res.append(("signoff", "fail" if bad else "warn" if warn else "pass",
                "; ".join(bad + warn) or "every author signs off; no placeholder identity"))
    # Fixes: of the form of submitting-patches.rst (FIXES_RX; the form only)
    bad, seen = [], 0
    for p, m in pats:
        for line in re.findall(r"(?mi)^Fixes:.*$", msgs[p[0]]):
            seen += 1
            why = fixes_problem(line)
            if why:
                bad.append("patch %d/%d: %r is not %s: %s" % (p[0], M, line, FIXES_FORM, why))
    res.append(checked("fixes-tag", bad, "%d Fixes: tag(s), each %s" % (seen, FIXES_FORM)))
    # kernel-doc warnings do not grow (base -> the applied patches)
    files = sorted({f for t in texts.values() for f in touched_files(t)
                    if f.endswith((".c", ".h"))})
    if os.path.exists(os.path.join(tree, "scripts", "kernel-doc")):
        bad = []
        for f in files:
            a, b = kdoc_warnings(tree, base, f), kdoc_warnings(tree, None, f)
            if b > a:
                bad.append("%s: %d -> %d kernel-doc warnings" % (f, a, b))
        res.append(checked("kdoc", bad, "no new kernel-doc warning in %d C files" % len(files)))
    else:
        res.append(("kdoc", "skip", "no scripts/kernel-doc"))
    # no new inline in .c files; no non-inline static function in a header:
    # rules of kernel code, so not for tools/ (the kselftests are user space
    # programs, and their headers are included by one program each)
    code = lambda f, l: not f.startswith("tools/") and not re.match(r"^\s*(\*|/\*|//)", l)
    bad = sorted({"%s: %s" % (f, l.strip()) for t in texts.values()
                  for f, l in added_lines(t, ".c") if code(f, l) and re.search(r"\binline\b", l)})
    res.append(checked("inline-in-c", bad, "no new inline in .c files (tools/ aside)"))
    bad = sorted({"%s: %s" % (f, l.strip()) for t in texts.values()
                  for f, l in added_lines(t, ".h")
                  if code(f, l) and re.match(r"^\s*static\b(?!.*inline\b)[^;=]*\(", l)
                  and not l.rstrip().endswith(";")})
    res.append(checked("static-in-header", bad,
                       "no non-inline static function in a header (tools/ aside)"))
    return res


def write_lint(res, path):
    """Print the checks, write them as JSON to PATH; the failures as problems."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"checks": [{"name": n, "verdict": v, "detail": d} for n, v, d in res],
                   "passed": sum(v == "pass" for n, v, d in res),
                   "failed": sum(v == "fail" for n, v, d in res)}, f, indent=1)
    for n, v, d in res:
        print("  lint %-17s %-4s %s" % (n + ":", v, d if v != "pass" else ""))
    return ["lint %s: %s" % (n, d) for n, v, d in res if v == "fail"]


def series_tree(base, names):
    """The tree of base + series/ (no checkout: a private index)."""
    idx = tempfile.mktemp(dir=WORK, prefix="index.")
    env = {"GIT_INDEX_FILE": idx}
    try:
        pgit("read-tree", base, env=env)
        for name in names:
            rc, out = run_rc(["git", "-C", PTREE, "apply", "--cached",
                              os.path.join(SERIES_DIR, name)], env=env, check=False)
            if rc:
                raise Fail("%s does not apply:\n%s" % (name, indent(out)))
        return pgit("write-tree", env=env).strip()
    finally:
        if os.path.exists(idx):
            os.unlink(idx)


# ------------------------------------------------------------- range-diff
# `git range-diff` needs both revisions' preimages in one repository, and v1
# was posted on another base (linux-source-6.1) than v2 (6.12). So the
# range-diff is taken at the mbox level with `b4 diff -m OLD.mbox NEW.mbox`:
# b4 rebuilds each revision on the blobs its patches' "index" lines name
# ("fake am"). The blobs of a posted revision's base that its patches
# modify are kept with it (cover-letter/posted/vN.preimage.tar.xz, written by
# --record), those of the current base come from the tree: no old base needs
# to be installed. The scratch repository is WORK/range-diff.git.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def preimage_files(mbox_path):
    """The paths of the base that a posted thread modifies: a file's first
    patch names a blob of the base unless it creates the file."""
    paths, seen = [], set()
    for p, m in sorted(numbered(mbox_path), key=lambda x: x[0][0]):
        cur = None
        for line in message_text(m).splitlines() if p[0] else []:
            d = re.match(r"^diff --git a/(\S+) b/", line)
            if d:
                cur = d.group(1)
                continue
            x = re.match(r"^index ([0-9a-f]+)\.\.", line)
            if x and cur:
                if cur not in seen and set(x.group(1)) != {"0"}:
                    paths.append(cur)
                seen.add(cur)
                cur = None
    return paths


def save_preimage(rev, mbox_path, base):
    """cover-letter/posted/vREV.preimage.tar.xz: the base's versions of the
    files the posted thread modifies (for a later mbox-level range-diff)."""
    dst = posted(rev, "preimage.tar.xz")
    files = [f for f in preimage_files(mbox_path)
             if not git(TREE, "cat-file", "-e", "%s:%s" % (base, f), check=False)]
    git(TREE, "-c", "tar.tar.xz.command=xz -9 -c", "archive", "--format=tar.xz", "-o", dst,
        base, "--", *files)
    return dst


def range_diff_repo(old_rev):
    repo = os.path.join(WORK, "range-diff.git")
    g = ["git", "--git-dir", repo]
    if not os.path.isdir(repo):
        run(["git", "init", "-q", "--bare", repo])
        for k, v in (("user.name", "range-diff"), ("user.email", "range-diff@localhost"),
                     ("gc.auto", "0")):
            run(g + ["config", k, v])
    # The current base's blobs: the tree's objects (read-only, by reference).
    objs = git(TREE, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    write(os.path.join(repo, "objects", "info", "alternates"), objs + "/objects\n")
    # The posted revision's base: its preimage blobs.
    pre = posted(old_rev, "preimage.tar.xz")
    if os.path.exists(pre):
        with tempfile.TemporaryDirectory(dir=WORK) as tmp:
            run(["tar", "-xJf", pre, "-C", tmp])
            paths = [os.path.join(dp, fn) for dp, dn, fns in os.walk(tmp) for fn in fns]
            run(g + ["hash-object", "-w", "--no-filters", "--stdin-paths"],
                inp="\n".join(paths) + "\n")
    if run(g + ["rev-parse", "-q", "--verify", "HEAD^{commit}"], check=False).strip() == "":
        c = run(g + ["commit-tree", EMPTY_TREE, "-m", "range-diff: empty root"],
                env={"GIT_AUTHOR_DATE": "2010-06-21T00:00:00Z",
                     "GIT_COMMITTER_DATE": "2010-06-21T00:00:00Z"}).strip()
        run(g + ["update-ref", "refs/heads/main", c])
        run(g + ["symbolic-ref", "HEAD", "refs/heads/main"])
    return repo


def series_mbox(rev, names, path):
    """series/ as a numbered thread ([PATCH vREV n/M], no cover), for a
    range-diff before the posting exists."""
    M = len(names)
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as out:
        for n, name in enumerate(names, 1):
            with open(os.path.join(SERIES_DIR, name), encoding="utf-8",
                      errors="surrogateescape") as f:
                text = sender_text(f.read())
            pre = "[PATCH v%d %d/%d]" % (rev, n, M) if rev > 1 else "[PATCH %d/%d]" % (n, M)
            # b4 needs a Message-ID; b4 caches its fake-am range by the
            # first one, so it changes with the content.
            mid = "<series-v%d-%d-%s@range-diff.localhost>" % (
                rev, n, hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:16])
            text = re.sub(r"(?m)^Subject: (\[[^\]]*\] *)?", "Message-ID: %s\nSubject: %s " % (
                mid, pre), text, count=1)
            if not text.startswith("From "):
                out.write("From mboxrd@z Thu Jan  1 00:00:00 1970\n")
            out.write(text.rstrip("\n") + "\n\n")
    return path


def range_diff(old_rev, new_mbox, out_file):
    """b4 diff -m of the posted vOLD_REV against NEW_MBOX into OUT_FILE;
    returns a list of problems (empty when it worked)."""
    old_mbox = posted(old_rev)
    if not os.path.exists(old_mbox):
        return ["no %s: nothing to range-diff against" % old_mbox]
    repo = range_diff_repo(old_rev)
    if os.path.exists(out_file):
        os.unlink(out_file)
    rc, out = run_rc(b4("diff", "-g", repo, "-m", old_mbox, new_mbox, "-o", out_file),
                     cwd=WORK, check=False)
    if rc or not os.path.exists(out_file) or not os.path.getsize(out_file):
        return ["b4 diff -m v%d.mbox %s failed (exit %d):\n%s" % (
            old_rev, os.path.basename(new_mbox), rc, indent(out.strip()[-2000:]))]
    body = open(out_file).read()
    # b4 leaves patches unpaired when they changed a lot (git range-diff's
    # creation factor); a reviewer also wants each v1 patch next to the v2
    # patch of the same (or a nearly the same) subject. Those pairs follow,
    # each a range-diff of one commit against one commit.
    m = re.search(r"git range-diff (\S+)\.\.(\S+) (\S+)\.\.(\S+)", out)
    extra = ""
    if m:
        g = ["git", "--git-dir", repo]
        old, new = ([l.split(" ", 1) for l in run(g + [
            "log", "--reverse", "--format=%H %s", "%s..%s" % r]).splitlines()]
            for r in (m.group(1, 2), m.group(3, 4)))
        # only what b4 left unpaired ("N: abc < -: ---", "-: --- > N: def")
        lone_o = {int(x) for x in re.findall(r"(?m)^\s*(\d+):\s+\S+ < ", body)}
        lone_n = {int(x) for x in re.findall(r"(?m)^\s*-:\s+-+ > \s*(\d+):", body)}
        for (i, (oc, osub)), (j, (nc, nsub)) in subject_pairs(old, new):
            if i not in lone_o or j not in lone_n:
                continue
            extra += "\n### v%d %d/%d -> v%d %d/%d: %s\n" % (
                old_rev, i, len(old), old_rev + 1, j, len(new), nsub)
            extra += run(g + ["range-diff", "--no-color", "--creation-factor=999",
                              "%s^..%s" % (oc, oc), "%s^..%s" % (nc, nc)])
    head = ("Range-diff v%d -> v%d, by `b4 diff -m v%d.mbox %s`\n(mbox level: b4 rebuilds "
            "each revision on the blobs its patches name, so the\ntwo may be on different "
            "bases).\n\n" % (
                old_rev, old_rev + 1, old_rev, os.path.basename(new_mbox)))
    if extra:
        extra = ("\n\nPatches b4 left unpaired, each v%d patch with the v%d patch of the "
                 "closest\nsubject (git range-diff of the two commits):\n%s" % (
                     old_rev, old_rev + 1, extra))
    write(out_file, head + body.rstrip("\n") + "\n" + extra)
    say("proof: range-diff against v%d (b4 diff -m, mbox level): %s, %d patches paired "
        "by subject" % (old_rev, rel(out_file, OUT), extra.count("\n### ")))
    return []


def subject_pairs(old, new, cutoff=0.75):
    """Pairs ((i, old), (j, new)), 1-based, of commits whose subjects
    (without the "prefix:") are most alike, each commit at most once."""
    import difflib

    def core(subj):
        return subj.rsplit(": ", 1)[-1].lower()
    cand = sorted(((difflib.SequenceMatcher(None, core(o[1]), core(n[1])).ratio(), i, j)
                   for i, o in enumerate(old, 1) for j, n in enumerate(new, 1)), reverse=True)
    used_o, used_n, pairs = set(), set(), []
    for r, i, j in cand:
        if r < cutoff or i in used_o or j in used_n:
            continue
        used_o.add(i)
        used_n.add(j)
        pairs.append(((i, old[i - 1]), (j, new[j - 1])))
    return sorted(pairs, key=lambda p: p[1][0])


# ------------------------------------------------------------- main
def send_command(rev, outdir):
    return ("git send-email --confirm=always %s/*.eml\n"
            "    (To/Cc are in each message; or, from the b4 prep branch %s:\n"
            "     cd %s && git config sendemail.smtpserver YOUR.SMTP.SERVER && b4 send)"
            % (outdir, BRANCH, PTREE))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "post"
    os.makedirs(WORK, exist_ok=True)
    names = series_list()
    base = base_commit()
    clone_ptree()
    tree = series_tree(base, names)
    rev = current_revision(tree)
    outdir = os.path.join(POST_OUT, "v%d" % rev)
    thread = os.path.join(outdir, "thread.mbox")
    rd = os.path.join(outdir, "range-diff-v%d.txt" % (rev - 1))
    recorded = rev in posted_revisions()
    if recorded and mode != "--record":
        print("  series/ and the cover letter are those of the recorded v%d: not a new "
              "revision (v%d starts when either changes); %s v%d's messages" % (
                  rev, rev + 1, "rebuilding" if mode == "post" else "checking", rev))
    if mode == "--verify":
        if read(os.path.join(outdir, "series.tree")) != tree:
            # make check on a clean clone, or after the series moved on
            print("  %s is missing or older than series/: making the posting first" % outdir)
            mode = "post"
        elif read(os.path.join(outdir, "sender")) != sender_stamp():
            print("  %s was made for another sender than %s <%s>: making the posting again"
                  % (outdir, SENDER_NAME, SENDER_EMAIL))
            mode = "post"
        elif read(os.path.join(outdir, "testing.txt")) != testing_section(tree).strip():
            print("  the stage results (build/results) changed since %s was made: "
                  "making the posting again, with the new Testing section" % outdir)
            mode = "post"
        else:
            problems = verify(outdir, tree, len(names), base)
            if rev > 1:
                if os.path.exists(rd) and os.path.getsize(rd):
                    say("proof: range-diff against v%d: %s" % (rev - 1, rel(rd, OUT)))
                else:
                    problems += range_diff(rev - 1, thread, rd)
            write_proof(outdir, rev, problems)
    if mode == "--range-diff":
        # The last posted revision against the posting of series/ when it is
        # current, else against series/ itself (numbered as revision N).
        if rev < 2:
            print("  no posted revision yet (cover-letter/posted/ is empty): nothing to compare")
            return 0
        if read(os.path.join(outdir, "series.tree")) == tree:
            new_mbox, out_file = thread, rd
        else:
            new_mbox = series_mbox(rev, names, os.path.join(WORK, "range-diff-series.mbox"))
            out_file = os.path.join(WORK, "range-diff-v%d-series.txt" % (rev - 1))
        problems = range_diff(rev - 1, new_mbox, out_file)
        if not problems:
            print(open(out_file).read(), end="")
            print("  range-diff v%d..v%d (%s): %s" % (rev - 1, rev, rel(new_mbox, WS), out_file))
    if mode == "--record":
        if recorded:
            raise Fail("v%d is already recorded as posted (cover-letter/posted/v%d.mbox) and "
                       "nothing changed since: nothing to record" % (rev, rev))
        if not os.path.exists(thread):
            raise Fail("no %s/thread.mbox: run make posting first" % outdir)
        problems = verify(outdir, tree, len(names), base)
        if problems:
            raise Fail("the posting does not verify; not recording it:\n" + "\n".join(problems))
        os.makedirs(os.path.join(COVER_DIR, "posted"), exist_ok=True)
        kept = [posted(rev, ext) for ext in ("mbox", "tree", "cover.txt", "messages")]
        shutil.copyfile(thread, kept[0])
        write(kept[1], tree + "\n")
        # the cover and the commit messages as posted, for unchanged_since_posted()
        shutil.copyfile(os.path.join(COVER_DIR, "cover.txt"), kept[2])
        write(kept[3], series_messages(names) + "\n")
        kept.append(save_preimage(rev, kept[0], base))
        # vN's changelog now speaks of a posted revision: its [[...]] become
        # the numbers they had in it (later revisions may renumber).
        cur, ch = changelog(rev), changelog(rev + 1)
        if REF.search(read(cur) or ""):
            write(cur, rewrap_entries(resolve_refs(read(cur), patch_subjects(names))) + "\n")
            kept.append(cur)
        if not os.path.exists(ch):
            os.makedirs(os.path.dirname(ch), exist_ok=True)
            write(ch, "- No change since v%d yet.\n" % rev)
            kept.append(ch)
        print("  recorded v%d as posted (cover Message-ID <%s>); the next posting is v%d" % (
            rev, cover_msgid(kept[0]), rev + 1))
        print("  commit it:  git add %s && git commit -m 'cover-letter: record v%d as posted'"
              % (" ".join(os.path.relpath(p, WS) for p in kept), rev))
        return 0
    elif mode == "post":
        # "No change since vN yet" must not go out with a changed series.
        ch, prev_tree = changelog(rev), read(posted(rev - 1, "tree"))
        if rev > 1 and prev_tree is not None and (read(ch) or "").startswith(NO_CHANGE) and \
                prev_tree != tree:
            raise Fail("the series changed since v%d but %s still says there is no change: "
                       "describe the changes (see make range-diff)" % (rev - 1,
                                                                       os.path.relpath(ch, WS)))
        progress("revision v%d, %d patches from %s" % (rev, len(names), SERIES_DIR))
        cover = compose_cover(rev, tree)
        described = {int(m) for m in re.findall(r"^\d+/(\d+) ", cover, re.M)}
        if described and described != {len(names)}:
            print("  WARNING: the cover letter describes a series of %s patches, series/ has %d:"
                  " update cover-letter/cover.txt" % ("/".join(map(str, sorted(described))),
                                                      len(names)))
        ptree = prepare_tree(names, rev, cover, base)
        if ptree != tree:
            raise Fail("the b4 branch's tree %s differs from base + series/ %s" % (ptree, tree))
        progress("b4 send -o %s" % outdir)
        emls = write_posting(outdir)
        progress("wrote %d messages and thread.mbox" % len(emls))
        problems = verify(outdir, tree, len(names), base)
        if rev > 1:
            problems += range_diff(rev - 1, thread, rd)
        write_proof(outdir, rev, problems)
        if not problems:
            write(os.path.join(outdir, "series.tree"), tree + "\n")
            write(os.path.join(outdir, "sender"), sender_stamp() + "\n")
            # the Testing section the cover was written with (--verify
            # makes the posting again when the results say otherwise)
            write(os.path.join(outdir, "testing.txt"), testing_section(tree))
        tip = git(TREE, "rev-parse", "-q", "--verify", "refs/heads/yama^{tree}",
                  check=False).strip()
        if tip and tip != tree:
            print("  note: build/linux branch yama (tree %s) differs from series/; the posting "
                  "is series/ (run make export?)" % tip[:12])
    if problems:
        print("error: the posting %s fails its proof:" % outdir, file=sys.stderr)
        for p in problems:
            print("  - " + p, file=sys.stderr)
        return 1
    if mode == "post":
        print("  posting: %s/ (%d .eml + thread.mbox), revision v%d" % (outdir, len(emls), rev))
        if SENDER_SOURCE == "placeholder":
            print("  NOT SENDABLE as it stands: From: and Signed-off-by: are the placeholder "
                  "%s <%s> (see the WARNING)" % (SENDER_NAME, SENDER_EMAIL))
        else:
            print("  to send it (nothing was sent):\n    " + send_command(rev, outdir))
    return 0


def sender_stamp():
    """Who the posting is from, and whether that is the placeholder. Not
    where the identity came from: a stage under make check inherits the
    SENDER that lib.sh decided ("env"), make posting decides it itself
    ("git"), and the same sender must not make the posting again."""
    return "%s <%s>%s" % (SENDER_NAME, SENDER_EMAIL,
                          " placeholder" if SENDER_SOURCE == "placeholder" else "")


def write_proof(outdir, rev, problems):
    """OUTDIR/proof.txt: what the proof established, or what failed."""
    if not os.path.isdir(outdir):
        return
    lines = ["proof of the posting v%d (%s)" % (
                 rev, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())),
             "sender: %s <%s> (from %s)" % (SENDER_NAME, SENDER_EMAIL, {
                 "env": "SENDER", "git": "git config user.name/user.email",
                 "placeholder": "nothing: the placeholder"
                 if SENDER_EMAIL.lower() == placeholder()[1].lower() else
                 "SENDER or git config, a reserved or no-reply address: a placeholder"
             }.get(SENDER_SOURCE, SENDER_SOURCE))]
    if SENDER_SOURCE == "placeholder":
        lines.append("NOT SENDABLE as it stands: a placeholder identity is on every "
                     "From: and Signed-off-by: (see tools/identity --warn)")
    lines += PROOF + ["FAIL: " + p.replace("\n", "\n      ") for p in problems]
    lines.append("verdict: %s" % ("FAIL" if problems else "pass"))
    write(os.path.join(outdir, "proof.txt"), "\n".join(lines) + "\n")


if __name__ == "__main__":
    cli("posting", main)
