"""Tests of make review, make trailers, the series lint and the revision
rule, on the recorded mbox fixtures of tools/tests/fixtures/ (made by
fixtures/make-fixtures on a tiny base tree; no kernel is built).

make review runs with REVIEW_STAGES limited to lint and range-diff, on a
base that tools/tree extracts from a tarball of fixtures/base/ (BASE_CONF).
"""
import email
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

WS = os.environ["WS"]  # conftest.py
FIX = os.path.join(WS, "tools", "tests", "fixtures")
import posting  # noqa: E402

PY = sys.executable  # the interpreter pytest runs in: tools/lib.sh's PYTHON


def sh(cmd, env=None, cwd=None):
    p = subprocess.run(cmd, env=dict(os.environ, **(env or {})), cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return p.returncode, p.stdout


def git(tree, *args):
    return subprocess.run(["git", "-C", tree] + list(args), check=True, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout.strip()


class Review(unittest.TestCase):
    """tools/review on the fixture threads."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="review-test.")
        src = os.path.join(cls.tmp, "src")
        shutil.copytree(os.path.join(FIX, "base"), os.path.join(src, "fixture-base"))
        tar = os.path.join(cls.tmp, "base.tar.xz")
        subprocess.run(["tar", "-cJf", tar, "-C", src, "fixture-base"], check=True)
        cls.conf = os.path.join(cls.tmp, "fixture.conf")
        with open(cls.conf, "w") as f:
            f.write("BASE_PACKAGE=fixture-base\nBASE_TARBALL=%s\nBASE_TOPDIR=fixture-base\n"
                    "BASE_IDENTITY_NAME=Fixture\nBASE_IDENTITY_EMAIL=fixture@localhost\n"
                    "BASE_DATE=2010-06-21T00:00:00+00:00\n" % tar)
        cls.build = os.path.join(cls.tmp, "build")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def review(self, mbox, stages="lint range-diff"):
        rc, out = sh([os.path.join(WS, "tools", "review"), mbox], env={
            "BASE": "fixture", "BASE_CONF": self.conf, "BUILD": self.build,
            "BASE_CACHE": os.path.join(self.tmp, "base-cache"),
            "COVER_DIR": os.path.join(FIX, "cover-letter"), "REVIEW_STAGES": stages})
        path = os.path.join(self.build, "results", "review.json")
        res = json.load(open(path)) if os.path.exists(path) else None
        if os.path.exists(path):
            os.unlink(path)
        return rc, out, res

    def test_clean_review_applies_lints_and_range_diffs_against_v1(self):
        rc, out, res = self.review(os.path.join(FIX, "v2-thread.mbox"))
        self.assertEqual(rc, 0, out)
        self.assertIn("applies:     yes", out)
        self.assertIn("since v1:    1 unchanged, 1 changed, 0 new, 0 dropped", out)
        self.assertIn("Changes in v2:", out)
        self.assertRegex(out, r"lint:\s+pass \(5 passed, 0 failed\)")
        self.assertEqual((res["verdict"], res["revision"], res["patches"], res["applies"]),
                         ("pass", 2, 2, True))
        self.assertEqual(res["range_diff_counts"], {"=": 1, "!": 1, "<": 0, ">": 0})
        rtree = os.path.join(self.build, "review", "linux")
        self.assertEqual(git(rtree, "log", "--format=%s", "base..HEAD").splitlines(),
                         ["yama: refuse symlinks in sticky directories",
                          "yama: add the symlinks sysctl"])
        self.assertIn("READ_ONCE(protected_symlinks)",
                      open(os.path.join(rtree, "security/yama/yama_lsm.c")).read())
        # its own tree: the workspace tree of this BUILD was never made
        self.assertFalse(os.path.exists(os.path.join(self.build, "linux")))

    def test_thread_that_does_not_apply_names_the_patch(self):
        rc, out, res = self.review(os.path.join(FIX, "v2-noapply.mbox"))
        self.assertNotEqual(rc, 0, out)
        self.assertIn('DOES NOT APPLY at patch 2/2 "yama: refuse symlinks in sticky '
                      'directories"', out)
        self.assertIn("applies:     NO: patch 2/2", out)
        self.assertEqual((res["applies"], res["failed_patch"], res["verdict"]), (False, 2, "fail"))

    def test_mail_client_thread_is_normalized(self):
        rc, out, res = self.review(os.path.join(FIX, "v2-mailclient.mbox"), "range-diff")
        self.assertEqual(rc, 0, out)
        for note in ("no cover letter", "out of order in the file (2 1)", "CRLF",
                     "folded headers"):
            self.assertIn(note, out)
        self.assertTrue(res["applies"])
        self.assertIn("no range-diff: no change-id", out)

    def test_not_an_mbox_is_refused(self):
        rc, out, res = self.review(os.path.join(FIX, "not-an-mbox.txt"))
        self.assertNotEqual(rc, 0)
        self.assertIn("is not an mbox", out)
        self.assertIn("== review: fail", out)

    def test_incomplete_and_mixed_threads_are_refused(self):
        text = open(os.path.join(FIX, "v2-thread.mbox")).read()
        msgs = ["From mboxrd" + m for m in text.split("From mboxrd")[1:]]
        v1 = open(os.path.join(FIX, "cover-letter", "posted", "v1.mbox")).read()
        for name, thread, why in [("part", msgs[0] + msgs[2], "lacks patch 1/2"),
                                  ("mixed", v1 + text, "mixes revisions v1, v2")]:
            path = os.path.join(self.tmp, name + ".mbox")
            with open(path, "w") as f:
                f.write(thread)
            rc, out, _ = self.review(path)
            self.assertNotEqual(rc, 0)
            self.assertIn(why, out)


class Trailers(unittest.TestCase):
    """tools/trailers on a tree of the fixture base + v1 (the recorded posting)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="trailers-test.")
        self.tree = os.path.join(self.tmp, "linux")
        shutil.copytree(os.path.join(FIX, "base"), self.tree)
        ident = ["-c", "user.name=Jane Doe", "-c", "user.email=jane@example.org"]
        git(self.tree, "init", "-q", "-b", "yama")
        git(self.tree, "add", "-A")
        git(self.tree, *ident, "commit", "-q", "-m", "base")
        git(self.tree, "tag", "base")
        am = os.path.join(self.tmp, "am.mbox")
        subprocess.run([PY, os.path.join(WS, "tools", "mail", "mbox-patches"),
                        os.path.join(FIX, "cover-letter", "posted", "v1.mbox"), am],
                       check=True, stdout=subprocess.DEVNULL)
        git(self.tree, *ident, "am", "-q", am)
        self.head = git(self.tree, "rev-parse", "HEAD")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def trailers(self, name):
        return sh([os.path.join(WS, "tools", "trailers"), os.path.join(FIX, name)], env={
            "BUILD": self.tmp, "TREE": self.tree, "SERIES_DIR": os.path.join(self.tmp, "series"),
            "BASE_CACHE": os.path.join(self.tmp, "base-cache"),
            "COVER_DIR": os.path.join(FIX, "cover-letter"),
            "RESULTS": os.path.join(self.tmp, "results")})

    def trailers_ok(self, name):
        rc, out = self.trailers(name)
        self.assertEqual(rc, 0, out)
        return out

    def result(self):
        with open(os.path.join(self.tmp, "results", "trailers.json")) as f:
            return json.load(f)

    def messages(self):
        return git(self.tree, "log", "--reverse", "--format=%B%x01", "base..HEAD").split("\x01")

    def test_trailers_from_cover_and_patch_replies(self):
        self.trailers_ok("replies.mbox")
        m1, m2 = self.messages()[:2]
        # at the end of the trailer block, after the sign-off
        self.assertIn("Signed-off-by: Jane Doe <jane@example.org>\n"
                      "Reviewed-by: Kees Cook <kees@example.org>\n"
                      "Acked-by: Serge Hallyn <serge@example.org>\n"
                      "Tested-by: Paul Moore <paul@example.org>\n", m1)
        # the cover's Reviewed-by on every patch; patch 2's own (by subject)
        self.assertIn("Signed-off-by: Jane Doe <jane@example.org>\n"
                      "Reviewed-by: Kees Cook <kees@example.org>\n"
                      "Suggested-by: Linus Torvalds <torvalds@example.org>\n", m2)
        self.assertNotIn("Acked-by", m2)
        # same trees, new commits; exported to series/
        self.assertEqual(git(self.tree, "rev-parse", "HEAD^{tree}"),
                         git(self.tree, "rev-parse", self.head + "^{tree}"))
        self.assertNotEqual(git(self.tree, "rev-parse", "HEAD"), self.head)
        series = os.path.join(self.tmp, "series")
        p1 = open(os.path.join(series, "0001-yama-add-the-symlinks-sysctl.patch")).read()
        self.assertIn("Tested-by: Paul Moore <paul@example.org>", p1)
        self.assertEqual(len(self.result()["added"]), 5)

    def test_a_duplicate_trailer_is_not_added_twice(self):
        out = self.trailers_ok("replies.mbox")
        # Kees's Reviewed-by comes from the cover and from patch 1's reply
        self.assertIn("already there: yama: add the symlinks sysctl: Reviewed-by: Kees Cook", out)
        head = git(self.tree, "rev-parse", "HEAD")
        self.assertIn("0 trailer(s) added", self.trailers_ok("replies.mbox"))
        self.assertEqual(git(self.tree, "rev-parse", "HEAD"), head)
        for m in self.messages()[:2]:
            self.assertEqual(m.count("Reviewed-by: Kees Cook <kees@example.org>"), 1, m)

    def test_comments_and_a_nak_are_listed_with_quoted_lines(self):
        out = self.trailers_ok("replies.mbox")
        self.assertIn("NAK from Al Viro <viro@example.org> on yama: refuse symlinks in sticky "
                      "directories:\n      > Should this read the sysctl once?\n"
                      "    | NAK until the race is fixed.", out)
        self.assertIn("comment to answer from Paul Moore <paul@example.org> on yama: refuse "
                      "symlinks", out)
        self.assertIn("      > +\tif (protected_symlinks && sticky)", out)
        res = self.result()
        self.assertEqual(res["naks"], 1)
        self.assertEqual(len(res["comments"]), 2)

    def assert_nothing_changed(self, name, why):
        rc, out = self.trailers(name)
        self.assertNotEqual(rc, 0, out)
        self.assertIn(why, out)
        self.assertIn("nothing changed", out)
        self.assertEqual(git(self.tree, "rev-parse", "HEAD"), self.head)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "series")))

    def test_reply_to_an_unknown_message_changes_nothing(self):
        self.assert_nothing_changed("replies-unknown.mbox",
                                    "answers no message of the recorded postings")

    def test_a_malformed_trailer_changes_nothing(self):
        # the same mbox has a good trailer for patch 1: not applied either
        self.assert_nothing_changed("replies-malformed.mbox",
                                    "malformed trailer line 'Acked-by Serge Hallyn")

    def test_not_an_mbox_changes_nothing(self):
        self.assert_nothing_changed("not-an-mbox.txt", "is not an mbox")


class Revision(unittest.TestCase):
    """posting.unchanged_since_posted: a series and cover identical to the
    last recorded revision are that revision."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="revision-test.")
        self.old = posting.COVER_DIR
        posting.COVER_DIR = self.tmp
        os.makedirs(os.path.join(self.tmp, "posted"))
        os.makedirs(os.path.join(self.tmp, "changes"))
        self.write("cover.txt", "security: Yama LSM: x\n")
        self.write("posted/v1.mbox", "")
        self.write("posted/v2.mbox", "")
        self.write("posted/v2.tree", "a" * 40 + "\n")
        self.write("posted/v2.cover.txt", "security: Yama LSM: x\n")
        self.write("changes/v3.txt", "- No change since v2 yet.\n")

    def tearDown(self):
        posting.COVER_DIR = self.old
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, name, text):
        with open(os.path.join(self.tmp, name), "w") as f:
            f.write(text)

    def test_unchanged_series_is_the_recorded_revision(self):
        self.assertEqual(posting.unchanged_since_posted("a" * 40), 2)
        self.assertEqual(posting.current_revision("a" * 40), 2)

    def test_changed_series_starts_the_next_revision(self):
        self.assertIsNone(posting.unchanged_since_posted("b" * 40))
        self.assertEqual(posting.current_revision("b" * 40), 3)

    def test_changed_cover_or_changelog_starts_the_next_revision(self):
        self.write("cover.txt", "security: Yama LSM: x\n\nMore.\n")
        self.assertEqual(posting.current_revision("a" * 40), 3)
        self.write("cover.txt", "security: Yama LSM: x\n")
        self.write("changes/v3.txt", "- Reworded the cover.\n")
        self.assertEqual(posting.current_revision("a" * 40), 3)

    def test_changed_commit_messages_start_the_next_revision(self):
        """make trailers changes messages, not code: still a new revision."""
        self.write("posted/v2.messages", posting.series_messages() + "\n")
        self.assertEqual(posting.current_revision("a" * 40), 2)
        self.write("posted/v2.messages", "0" * 40 + "\n")
        self.assertEqual(posting.current_revision("a" * 40), 3)

    def test_the_workspace_prepares_v3(self):
        """v1 and v2 are recorded; the v3 series differs from v2."""
        posting.COVER_DIR = self.old
        self.assertEqual(posting.posted_revisions(), [1, 2])
        self.assertIsNone(posting.unchanged_since_posted("0" * 40))
        self.assertEqual(posting.current_revision("0" * 40), 3)
        # even v2's own tree: changes/v3.txt is written and cover.txt is no
        # longer the one v2 posted, so the cover changed
        v2 = open(os.path.join(self.old, "posted", "v2.tree")).read().strip()
        self.assertIsNone(posting.unchanged_since_posted(v2))
        self.assertEqual(posting.current_revision(v2), 3)


def msg(n, M, subject, body, frm="Jane Doe <jane@example.org>", prefix="PATCH v2"):
    m = email.message_from_string("From: %s\nTo: a@example.org\nSubject: [%s %d/%d] %s\n"
                                  "Message-ID: <%d@x>\n\n%s" % (frm, prefix, n, M, subject, n,
                                                                body))
    return ((n, M, subject), m)


PATCH = """Commit message.

%sSigned-off-by: Jane Doe <jane@example.org>
---
diff --git a/%s b/%s
index 1111111..2222222 100644
--- a/%s
+++ b/%s
@@ -1,1 +1,2 @@
 x
+%s
"""


class Lint(unittest.TestCase):
    """posting.lint: each named check turns red on its own fault."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lint-test.")
        self.tree = os.path.join(self.tmp, "tree")
        os.makedirs(self.tree)
        ident = ["-c", "user.name=B", "-c", "user.email=b@example.org"]
        git(self.tree, "init", "-q")
        git(self.tree, *ident, "commit", "-q", "--allow-empty", "-m", "yama: an old change")
        git(self.tree, "tag", "base")
        self.old_sha = git(self.tree, "rev-parse", "--short=12", "base")
        self.work = posting.WORK
        posting.WORK = self.tmp

    def tearDown(self):
        posting.WORK = self.work
        shutil.rmtree(self.tmp, ignore_errors=True)

    def lint(self, info, send=True):
        return {n: (v, d) for n, v, d in posting.lint(info, self.tree, "base", send)}

    def series(self, added="int x;", path="security/yama/yama_lsm.c", tag="", M=2, **kw):
        info = [msg(0, M, "security: Yama LSM: x", "cover")]
        for n in range(1, M + 1):
            info.append(msg(n, M, "yama: p%d" % n, PATCH % (tag, path, path, path, path, added),
                            **kw))
        return info

    def test_a_clean_series_passes(self):
        res = self.lint(self.series(tag="Fixes: %s (\"yama: an old change\")\n" % self.old_sha))
        for name in ("series-format", "signoff", "fixes-tag", "inline-in-c", "static-in-header"):
            self.assertEqual(res[name][0], "pass", (name, res[name]))
        self.assertEqual(res["cc-maintainers"][0], "skip")

    def test_series_format(self):
        res = self.lint(self.series(M=16)[1:])
        self.assertEqual(res["series-format"][0], "fail")
        self.assertIn("no cover letter", res["series-format"][1])
        self.assertIn("16 patches, more than 15", res["series-format"][1])
        info = self.series()
        info[2] = msg(2, 2, "yama: p2", "x", prefix="RFC PATCH v2")
        self.assertIn("subject prefixes differ", self.lint(info)["series-format"][1])

    def test_signoff_and_placeholder(self):
        res = self.lint(self.series(frm="Other Person <other@example.org>"))
        self.assertEqual(res["signoff"][0], "fail")
        self.assertIn("the author <other@example.org> has no Signed-off-by", res["signoff"][1])
        ph = "%s <%s>" % posting.placeholder()
        info = self.series(frm=ph)
        for p, m in info:
            m.set_payload(m.get_payload().replace("Jane Doe <jane@example.org>", ph))
        verdict, detail = self.lint(info)["signoff"]
        self.assertEqual(verdict, "fail")
        self.assertIn("placeholder", detail)
        self.assertEqual(self.lint(info, send=False)["signoff"][0], "warn")

    def test_fixes_tag(self):
        # The form only (tests of each rule: test_posting.py): the base is a
        # one-commit tarball import, so an upstream id is never one of its
        # commits, and the subject is not compared.
        res = self.lint(self.series(tag="Fixes: 0123456789ab (\"yama: x\")\n"))
        self.assertEqual(res["fixes-tag"][0], "pass", res["fixes-tag"])
        res = self.lint(self.series(tag="Fixes: the race\n"))
        self.assertEqual(res["fixes-tag"][0], "fail")
        self.assertIn("patch 1/2: 'Fixes: the race' is not Fixes:", res["fixes-tag"][1])

    def test_inline_in_c_and_static_function_in_header(self):
        h = "include/linux/yama.h"
        for added, path, want in [
                ("static inline int f(void) { return 0; }", "security/yama/yama_lsm.c",
                 {"inline-in-c": "fail"}),
                ("static int f(void)", h, {"static-in-header": "fail", "inline-in-c": "pass"}),
                ("static inline int f(void)", h, {"static-in-header": "pass"}),
                ("static __always_inline int f(void)", h, {"static-in-header": "pass"}),
                # user space (the kselftests) is not kernel code
                ("static int f(void)", "tools/testing/selftests/yama/common.h",
                 {"static-in-header": "pass"})]:
            with self.subTest(added=added, path=path):
                res = self.lint(self.series(added=added, path=path))
                self.assertEqual({k: res[k][0] for k in want}, want)


# trailers.py needs TREE at import; set only for the import, so that the
# other test files of the same pytest run see the environment unchanged.
_tree = os.environ.setdefault("TREE", "/nonexistent")
import trailers  # noqa: E402
if _tree == "/nonexistent":
    del os.environ["TREE"]


class TrailerLines(unittest.TestCase):
    """How make trailers reads reply lines and where it puts trailers."""

    def test_prose_is_not_a_trailer_and_variants_are(self):
        self.assertIsNone(trailers.LOOSE.match("Tested by booting it on arm64."))
        self.assertIsNone(trailers.LOOSE.match("Reported by syzbot a while ago"))
        st = trailers.STRICT.match("Reviewed-By:  Kees Cook <kees@example.org>")
        self.assertIsNotNone(st)
        self.assertEqual(trailers.CANONICAL[st.group(1).lower()], "Reviewed-by")
        # meant as a trailer (an address), but malformed: reported
        bad = "Acked-by Jane <jane@example.org>"
        self.assertTrue(trailers.LOOSE.match(bad) and not trailers.STRICT.match(bad))

    def test_an_existing_trailer_in_another_case_is_a_duplicate(self):
        line = "Reviewed-By: Kees Cook <Kees@Example.org>"
        self.assertTrue(trailers.TRAILER.match(line))
        self.assertEqual(trailers.trailer_key(line),
                         trailers.trailer_key("Reviewed-by: Kees Cook <kees@example.org>"))

    def test_naks(self):
        for line in ("NAK, this breaks ptrace.", "NACK.", "Nacked-by: J <j@example.org>",
                     "  nacked-by: J <j@example.org>"):
            self.assertTrue(trailers.NAK.search(line), line)
        for line in ("This is not a NAK, just a question.",
                     "The device answers with a NAK here.", "> NAK"):
            self.assertFalse(trailers.NAK.search(line), line)

    def test_quoted_lines_are_not_the_repliers(self):
        own, quoted = trailers.own_and_quoted("  > NAK\nLooks good.\n")
        self.assertEqual(quoted, ["  > NAK"])
        self.assertNotIn("  > NAK", own)

    def test_placement_keeps_co_developer_pairs_and_link_last(self):
        body = ("yama: x\n\nWhy.\n\nCo-developed-by: A <a@example.org>\n"
                "Signed-off-by: A <a@example.org>\nSigned-off-by: J <j@example.org>\n"
                "Link: https://example.org/x\n")
        new = trailers.new_message(body, ["Reviewed-by: K <k@example.org>"])
        self.assertEqual(new.splitlines()[-5:], [
            "Co-developed-by: A <a@example.org>", "Signed-off-by: A <a@example.org>",
            "Signed-off-by: J <j@example.org>", "Reviewed-by: K <k@example.org>",
            "Link: https://example.org/x"])
        new = trailers.new_message("yama: x\n\nWhy.\n", ["Acked-by: K <k@example.org>"])
        self.assertEqual(new, "yama: x\n\nWhy.\n\nAcked-by: K <k@example.org>\n")


if __name__ == "__main__":
    unittest.main()


def test_summary_fails_a_stage_that_left_no_verdict(tmp_path):
    """A stage that was asked for and ran on an applied thread, but wrote
    no verdict (it died), fails the review; with its verdict it passes."""
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "state.json").write_text(json.dumps(
        {"mbox": "t.mbox", "revision": 2, "subject": "s", "patches": 1, "cover": True,
         "applies": True, "base": "0" * 40}))
    env = dict(os.environ, REVIEW_DIR=str(tmp_path), TREE=str(tmp_path / "linux"),
               RESULTS=str(results), MAIN_RESULTS=str(tmp_path / "main"))

    def summary():
        rc, out = sh([PY, os.path.join(WS, "tools/mail/review.py"), "summary", "lint kunit"],
                     env)
        return rc, out, json.load(open(tmp_path / "main/review.json"))["verdict"]

    (results / "lint.verdict").write_text("lint\tpass\t3\t0\n")
    rc, out, verdict = summary()
    assert "kunit:       no verdict (stage died)" in out, out
    assert (rc, verdict) == (1, "fail")
    (results / "kunit.verdict").write_text("kunit\tpass\t14\t0\n")
    rc, out, verdict = summary()
    assert "kunit:       pass (14 passed, 0 failed)" in out, out
    assert (rc, verdict) == (0, "pass")
