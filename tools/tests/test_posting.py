"""Tests of tools/posting (tools/mail/posting.py).

Fast tests use temporary files only. The end-to-end tests run b4 in the
posting tree on a scratch series and need build/linux (or BUILD=DIR with
DIR/linux; SCRATCH_REPO=that tree); they run with RUN_POSTING_TESTS=1
(about a minute each):
    RUN_POSTING_TESTS=1 python3 -m pytest -q tools/tests/test_posting.py
"""
import email
import json
import mailbox
import os
import pathlib
import re
import shutil
import subprocess
import tarfile

import pytest

WS = os.environ["WS"]  # conftest.py
import posting  # noqa: E402

E2E = pytest.mark.skipif(os.environ.get("RUN_POSTING_TESTS") != "1",
                         reason="runs b4 in build/posting; set RUN_POSTING_TESTS=1")


def test_parse_subject():
    assert posting.parse_subject("[PATCH v2 3/7] yama: x") == (3, 7, "yama: x")
    assert posting.parse_subject("[PATCH 0/7]\n security: Yama LSM: y") == (
        0, 7, "security: Yama LSM: y")
    assert posting.parse_subject("[PATCH] yama: x") is None


def test_testing_section_without_results_says_not_run(tmp_path, monkeypatch):
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    text = posting.testing_section("0" * 40)
    assert text.count("not run in this workspace") == 4


FIXTURES = os.path.join(WS, "tools", "tests", "fixtures")
# kunit.json, selftests.json and series-check.json exactly as the stages
# wrote them in the fresh-clone make check of main at eeeb65b (cold, 2205 s,
# 681 passed, 0 failed).
RECORDED = os.path.join(FIXTURES, "make-check-eeeb65b")
# check-debug.json as tools/check-debug wrote it for the tip tree 6224e77
# (make check-debug of 2026-12-04 18:02 UTC at c4cd5ad).
RECORDED_DEBUG = os.path.join(FIXTURES, "check-debug-6224e77", "check-debug.json")
TIP = "6224e7799b983ef32f135b4dbf2540e00151efa7"


def recorded(tmp_path, monkeypatch, change=None):
    """The recorded results in tmp_path, changed by change(name, data)."""
    for name in ("kunit.json", "selftests.json", "series-check.json", "check-debug.json"):
        data = json.load(open(RECORDED_DEBUG if name == "check-debug.json"
                              else os.path.join(RECORDED, name)))
        if change:
            change(name, data)
        (tmp_path / name).write_text(json.dumps(data))
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))


def only(file, **fields):
    """A change for recorded(): FIELDS set in the record FILE."""
    return lambda name, data: data.update(fields) if name == file else None


def flat(tip=TIP):
    """The Testing section for TIP on one line."""
    return " ".join(posting.testing_section(tip).split())


def v3_gates(name, data):
    """A change for recorded(): the tip gates of series-check.json as
    make series-check names them since the v3 tooling. The record predates
    it: its matrix had "kunit-test=n" (the main config had KUnit on) and
    a "kunit-test=y" tip cell of the main config; now the main config has
    no KUnit and the matrix entry "kunit-test=y" turns it on."""
    if name == "series-check.json":
        data["tip_gates"] = ["yama=n", "sysctl=n", "kunit-test=y", "rst"]
        data["cells"]["tip"].pop("kunit-test=n")


def test_testing_section_reads_recorded_results(tmp_path, monkeypatch):
    recorded(tmp_path, monkeypatch, v3_gates)
    text = posting.testing_section(TIP)
    one_line = " ".join(text.split())
    # the tip the gates checked is the tip posted: no NOTE
    assert ("- Series gates (`make series-check`): 55 cells passed, 0 failed over 10 patches."
            in one_line)
    assert ("The tip built with SECURITY_YAMA=n, SYSCTL=n, the KUnit test on (the series' "
            "objects only), Yama.rst parsed by docutils: passed." in one_line)
    assert "KUnit test off" not in one_line
    # KUnit: 14 cases, once, as make kunit runs them: kunit.py run with the
    # tree's .kunitconfig (not in the kernel the kselftests boot)
    assert ("- KUnit (`make kunit`: kunit.py run --arch=x86_64 --kunitconfig=security/yama "
            "under QEMU): 14 cases in 3 suites (yama_hardlink 2, yama_symlink 5, "
            "yama_sysctl 7), all passed." in one_line)
    assert "kunit.py exec" not in one_line and "the kernel the kselftests boot" not in one_line
    # One line per boot, with what the boot changes on the command line
    # (the harness's own options, kunit.enable=0 among them, left out).
    assert "- default: 160/0/5" in text
    assert "- cmdline: 160/0/5 (sysctl.kernel.yama.ptrace_scope=2" in text
    assert "- no-yama: 0/0/165 (lsm=landlock)" in text
    assert "- landlock: 162/0/3 (lsm=landlock,yama)" in text
    assert "- vfs-diff: 4/0/0" in text and "selftests.only" not in text
    assert "kunit.enable" not in text
    # the differential test's own counts
    assert "seed 20101020, 22000 cases" in one_line and "22000 agree, 0 disagree" in one_line
    # the debug kernel's run, on the same tip
    assert ("- Debug kernel (`make check-debug`): lockdep, PROVE_RCU, KASAN, KFENCE, "
            "DEBUG_OBJECTS, panic_on_warn=1, one boot: 14 KUnit cases and 181 kselftest, stress "
            "and bad-input cases (3 skipped), all passed. Stress: 36726 operations, 31735 "
            "decisions judged, 0 wrong." in one_line)
    assert max(len(l) for l in text.splitlines()) <= 72, text
    assert "not run" not in text and "NOTE" not in text


def test_testing_section_says_when_the_gates_checked_another_tip(tmp_path, monkeypatch):
    recorded(tmp_path, monkeypatch)
    assert ("- Series gates (`make series-check`) (NOTE: for an earlier state of the series)"
            in flat("0" * 40))


def test_testing_section_reports_failures(tmp_path, monkeypatch):
    def change(name, data):
        if name == "kunit.json":
            data["default"]["failed"] = 1
            data["default"]["passed"] -= 1
            data["default"]["suites"]["yama_sysctl"]["failed"] = 1
            data["default"]["suites"]["yama_sysctl"]["passed"] -= 1
        elif name == "selftests.json":
            d = data["scenarios"]["vfs-diff"]["counts"]["vfs_diff"]
            d["agree"] -= 3
            d["disagree"] = 3
            data["scenarios"]["landlock"]["fail"] = 2
            data["scenarios"]["landlock"]["pass"] -= 2
        elif name == "series-check.json":
            v3_gates(name, data)
            data["cells"]["tip"]["sysctl=n"]["status"] = "FAIL"
            data["cells"]["tip"]["kunit-test=y"]["status"] = "FAIL"
        elif name == "check-debug.json":
            data["problems"] = ["console: BUG: KASAN: slab-use-after-free in yama_ptracer_del"]
            data["verdict"] = "fail"
    recorded(tmp_path, monkeypatch, change)
    text = flat()
    assert "14 cases in 3 suites" in text
    assert "NOT all passed: 1 failed, 0 crashed, 0 skipped" in text
    assert "- landlock: 160/2/3" in text
    assert "21997 agree, 3 disagree" in text
    assert "passed; failed: SYSCTL=n, the KUnit test on (the series' objects only)." in text
    assert "(3 skipped), FAILED: 1 kernel report(s) or problem(s). Stress:" in text


def test_testing_section_reports_a_debug_run_that_failed_otherwise(tmp_path, monkeypatch):
    """A failed SYSCTL=n build, or a run that stopped, is no pass either."""
    recorded(tmp_path, monkeypatch, only("check-debug.json", gates_rc=1, verdict="fail"))
    assert "(3 skipped), FAILED: the SYSCTL=n build failed." in flat()
    recorded(tmp_path, monkeypatch, only("check-debug.json", selftests_rc=124, verdict="fail"))
    assert "(3 skipped), FAILED: the run did not finish." in flat()
    # The record tools/check-debug's fail_stage writes for a run that stops.
    (tmp_path / "check-debug.json").write_text(
        '{"verdict": "fail", "stopped": "building selftests/stress/yama_stress.c failed",'
        ' "tip_tree": "%s", "tree_edited": false}' % TIP)
    assert ("- Debug kernel (`make check-debug`): FAILED, the run stopped: building "
            "selftests/stress/yama_stress.c failed" in flat())


def test_testing_section_says_when_the_debug_run_tested_another_tree(tmp_path, monkeypatch):
    note = "- Debug kernel (`make check-debug`) (NOTE: for another state of the series):"
    recorded(tmp_path, monkeypatch, only("check-debug.json", tree_edited=True))
    assert note in flat()
    recorded(tmp_path, monkeypatch)
    assert note in flat("0" * 40)


def test_testing_section_sysctl_n_objects_only(tmp_path, monkeypatch):
    """series-check.json of make check (SYSCTL=n: the series' objects)."""
    recorded(tmp_path, monkeypatch, only("series-check.json", sysctl_n="objects"))
    assert "SYSCTL=n (the series' objects only)" in flat("t")


def test_testing_section_names_the_gates_linker(tmp_path, monkeypatch):
    """series-check.json says which linker its builds used; the recorded
    one (before the field) says nothing, and so does the section."""
    recorded(tmp_path, monkeypatch)
    assert "an x86_64 W=1 build with no warning the base did not have" in flat("t")
    recorded(tmp_path, monkeypatch, only("series-check.json", linker="ld.lld"))
    text = posting.testing_section("t")
    assert "an x86_64 W=1 build (gcc, ld.lld) with no warning the base did not have" \
        in " ".join(text.split())
    assert max(len(l) for l in text.splitlines()) <= 72, text


MBOX_V1 = """From x Thu Jan  1 00:00:00 1970
From: A <a@example.org>
To: linux-security-module@vger.kernel.org
Subject: [PATCH 0/1] security: Yama LSM: x
Message-ID: <cover-v1@example.org>

cover

"""


def cover_letter(d, monkeypatch, body, posted_v1=False):
    """cover-letter/ in D (with cover.txt BODY, changes/v1.txt, and
    posted/v1.mbox if POSTED_V1) as posting's COVER_DIR and RESULTS."""
    (d / "changes").mkdir()
    (d / "cover.txt").write_text(body)
    (d / "changes" / "v1.txt").write_text("- First posting.\n")
    if posted_v1:
        (d / "posted").mkdir()
        (d / "posted" / "v1.mbox").write_text(MBOX_V1)
    monkeypatch.setattr(posting, "COVER_DIR", str(d))
    monkeypatch.setattr(posting, "RESULTS", str(d))


@pytest.mark.parametrize("body,rev,why", [
    ("security: Yama LSM: x\n\nEDITME: describe\n\n@@TESTING@@\n", 1, "EDITME"),
    ("yama: x\n\nbody\n\n@@TESTING@@\n", 1, "security: Yama LSM"),
    ("security: Yama LSM: x\n\nbody\n\n@@TESTING@@\n", 2, "EDITME"),  # no changes/v2.txt
], ids=["editme-cover", "subject-not-security-yama", "missing-v2-changelog"])
def test_an_unfinished_cover_fails(tmp_path, monkeypatch, body, rev, why):
    cover_letter(tmp_path, monkeypatch, body, posted_v1=rev == 2)
    with pytest.raises(posting.Fail, match=why):
        posting.compose_cover(rev, "t")


def test_v2_cover_has_changes_and_link_to_v1(tmp_path, monkeypatch):
    cover_letter(tmp_path, monkeypatch,
                 "security: Yama LSM: x\n\nbody\n\n@@TESTING@@\n\n@@CHANGES@@\n", posted_v1=True)
    (tmp_path / "changes" / "v2.txt").write_text("- Fixed the thing.\n")
    assert posting.current_revision() == 2
    assert ("Changes in v2:\n- Fixed the thing.\n"
            "- Link to v1: https://lore.kernel.org/r/cover-v1@example.org"
            in posting.compose_cover(2, "t"))


def test_verify_reports_missing_to_and_threading(tmp_path, monkeypatch):
    d = tmp_path / "v1"
    d.mkdir()
    (d / "thread.mbox").write_text(MBOX_V1 + """From x Thu Jan  1 00:00:00 1970
From: A <a@example.org>
Subject: [PATCH 1/1] yama: x
Message-ID: <p1@example.org>

body
""")
    problems = posting.verify(str(d), expect_n=1, base="0" * 40)
    assert any("no To header" in p for p in problems)


def mkscratch(tmp_path, variant="good"):
    out = tmp_path / ("series-" + variant)
    subprocess.run([os.path.join(WS, "tools/gates/make-scratch-series"), str(out), variant],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def scratch_cover(tmp_path):
    """cover-letter/ with v1 posted, and a cover and v2 changelog that name
    the two patches of the scratch series."""
    cov = tmp_path / "cover"
    # v1's records only (the workspace has later ones): the scratch series
    # is v2 of a v1 posting
    shutil.copytree(os.path.join(WS, "cover-letter"), cov, ignore=lambda d, names: [
        n for n in names if re.match(r"^v(?!1\.)\d+\.", n) and os.path.basename(d) == "posted"
        or re.match(r"^v(?![12]\.)\d+\.txt$", n) and os.path.basename(d) == "changes"])
    (cov / "cover.txt").write_text(
        "security: Yama LSM: scratch\n\nA scratch series.\n\n"
        "[[name the ptrace scopes]] names the scopes.\n\n@@TESTING@@\n\n@@CHANGES@@\n")
    (cov / "changes" / "v2.txt").write_text(
        "- Scope names (point 1): patch [[name the ptrace scopes]].\n")
    return cov


def run_posting(tmp_path, series, cover_dir=None, extra=None, cmd=("posting",)):
    """tools/CMD (default tools/posting) on SERIES: (exit status, output)."""
    env = dict(os.environ, SERIES_DIR=str(series), POSTING_OUT=str(tmp_path / "out"))
    env["COVER_DIR"] = str(cover_dir or scratch_cover(tmp_path))
    env.update(extra or {})
    p = subprocess.run([os.path.join(WS, "tools", cmd[0])] + list(cmd[1:]), env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


@E2E
def test_posting_of_a_scratch_series_passes_its_proof(tmp_path):
    rc, out = run_posting(tmp_path, mkscratch(tmp_path),
                          extra={"SENDER": "Jane Doe <jane@kernel.org>"})
    assert rc == 0, out
    assert "git am onto base" in out and "b4 --offline-mode am" in out
    assert "get_maintainer.pl" in out and "WARNING" not in out
    v2 = tmp_path / "out" / "v2"
    emls = sorted(os.listdir(v2))
    assert emls[0].startswith("0000-") and "thread.mbox" in emls
    # the sender on every message; the changelog names the patch by number
    msgs = list(mailbox.mbox(str(v2 / "thread.mbox")))
    assert all("jane@kernel.org" in m["From"] for m in msgs)
    assert all("yama-dev@example.org" not in m.as_string() for m in msgs)
    assert "patch 1/2." in msgs[0].get_payload()
    proof = (v2 / "proof.txt").read_text()
    assert "sender: Jane Doe <jane@kernel.org> (from SENDER)" in proof
    assert "verdict: pass" in proof and "NOT SENDABLE" not in proof
    # the range-diff against v1, at the mbox level
    rd = (v2 / "range-diff-v1.txt").read_text()
    assert "b4 diff -m v1.mbox" in rd and "yama: move the ptrace attach decision" in rd


@E2E
def test_posting_with_the_placeholder_warns_and_records_it(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    rc, out = run_posting(tmp_path, mkscratch(tmp_path), extra={
        "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "IDENTITY_REPO": str(tmp_path),
        "SENDER": ""})
    assert rc == 0, out
    assert out.count("WARNING: the posting is NOT sendable") == 2, out
    assert "NOT SENDABLE as it stands: From: and Signed-off-by: are the placeholder" in out
    assert "placeholder sender: NOT SENDABLE" in out  # the stage's verdict line
    proof = (tmp_path / "out" / "v2" / "proof.txt").read_text()
    assert "NOT SENDABLE as it stands" in proof


@E2E
def test_posting_with_a_ref_to_no_patch_fails(tmp_path):
    cov = scratch_cover(tmp_path)
    (cov / "changes" / "v2.txt").write_text("- Something (point 1): patch [[no such patch]].\n")
    rc, out = run_posting(tmp_path, mkscratch(tmp_path), cover_dir=cov)
    assert rc != 0 and "[[no such patch]]" in out and "matches none" in out, out


@E2E
def test_posting_with_editme_cover_fails(tmp_path):
    cov = scratch_cover(tmp_path)
    (cov / "cover.txt").write_text((cov / "cover.txt").read_text() + "\nEDITME: more\n")
    rc, out = run_posting(tmp_path, mkscratch(tmp_path), cover_dir=cov)
    assert rc != 0 and "EDITME" in out, out


@E2E
def test_posting_without_to_fails(tmp_path):
    cfg = tmp_path / "b4-config"
    cfg.write_text("[b4]\n\tsend-no-patatt-sign = yes\n")
    rc, out = run_posting(tmp_path, mkscratch(tmp_path),
                          extra={"B4_CONFIG": str(cfg), "POSTING_NO_AUTO_CC": "1"})
    assert rc != 0 and "destination" in out, out


@E2E
def test_posting_with_a_patch_that_does_not_apply_fails(tmp_path):
    s = mkscratch(tmp_path)
    p = sorted(s.glob("0002-*.patch"))[0]
    p.write_text(p.read_text().replace("pr_info(\"Yama: disabled", "pr_info(\"Yama: enabled"))
    rc, out = run_posting(tmp_path, s)
    assert rc != 0 and "does not apply" in out, out


# ------------------------------------------------------------- v2: names of patches
SUBJECTS = ["lsm: pass the mount's idmap to the inode_follow_link hook",
            "yama: read ptrace_scope once per decision",
            "yama: keep ptrace_scope at 3 against concurrent writers",
            "yama: accept exactly one number in ptrace_scope writes",
            "yama: choose the boot ptrace scope in Kconfig",
            "yama: refuse to follow symlinks in sticky world-writable directories",
            "yama: refuse hardlinks to files the caller cannot use",
            "Documentation: yama: describe the link restrictions",
            "yama: add KUnit tests for the link decisions",
            "selftests/yama: test the sysctls and the restrictions"]


def test_refs_name_patches_by_subject():
    text = ("patch [[inode_follow_link]] and [[Selftests/yama]], "
            "[[yama: choose the boot ptrace scope in Kconfig]]")
    assert posting.resolve_refs(text, SUBJECTS) == "patch 1/10 and 10/10, 5/10"


@pytest.mark.parametrize("ref,why", [("no such patch", "matches none"),
                                     ("yama: refuse", "matches several")])
def test_a_ref_that_is_not_one_patch_fails(ref, why):
    with pytest.raises(posting.Fail, match=why):
        posting.resolve_refs("[[%s]]" % ref, SUBJECTS)


def test_rewrap_keeps_entries_within_72_columns():
    text = "- A (point 1): " + "word " * 40 + "\n  more [[x]] here.\n- B.\n\nplain line"
    out = posting.rewrap_entries(text)
    assert all(len(l) <= 72 for l in out.splitlines())
    assert out.count("\n- ") == 1
    assert out.startswith("- A (point 1): ") and out.endswith("plain line")


def test_the_v2_changelog_answers_every_review_point():
    """cover-letter/changes/v2.txt: an entry for the rebase and for each of
    the 12 points of the v1 review, each naming the v2 patch(es) it is in."""
    text = open(os.path.join(WS, "cover-letter", "changes", "v2.txt")).read()
    entries = ["- " + e for e in ("\n" + text).split("\n- ")[1:]]
    assert "linux-source-6.12" in entries[0] and "[[" not in entries[0]
    points = {}
    for e in entries:
        m = re.search(r"\((?:review )?point (\d+)\)", e)
        if m:
            points[int(m.group(1))] = e
    assert sorted(points) == list(range(1, 13))
    for n, e in points.items():
        assert "[[" in e or "All patches" in e, "point %d names no patch: %s" % (n, e)
    assert any("rebased" in e.lower() and "6.12" in e for e in entries)
    # and every reference resolves against the planned v2 series
    body = posting.resolve_refs(text, SUBJECTS)
    assert "[[" not in body


def posted_cover_section(rev, title):
    """The part of the recorded vREV's cover (cover-letter/posted/) from
    the line TITLE to the end of its "- Link to" line."""
    for m in mailbox.mbox(posting.posted(rev)):
        p = posting.parse_subject(m.get("Subject", ""))
        if p and p[0] == 0:
            body = m.get_payload(decode=True).decode()
            i = body.index(title)
            return body[i:body.index("\n", body.index("- Link to", i)) + 1]
    raise AssertionError("no cover letter in %s" % posting.posted(rev))


def test_the_v3_cover_renders_with_the_series(monkeypatch, tmp_path):
    """v2 is recorded: the cover is v3's, its references resolve against
    series/ (the v3 patches), and Changes in v2 is what the v2 cover said."""
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    assert posting.posted_revisions()[-1] == 2
    M = len(posting.patch_subjects())
    text = posting.compose_cover(3, "t")
    assert "[[" not in text and "Changes in v3:" in text and "Changes in v2:" in text
    # every patch is described by a paragraph that starts with its number
    # ("1/10 and 2/10 are fixes ...")
    described = set()
    for para in text.split("\n\n"):
        lead = re.match(r"^(\d+/%d(?:,? (?:and )?\d+/%d)*) " % (M, M), para)
        if lead:
            described |= {int(n) for n in re.findall(r"(\d+)/%d" % M, lead.group(1))}
    assert described == set(range(1, M + 1))
    long = [l for l in text.splitlines() if len(l) > 72 and "://" not in l
            and not l.startswith("- Series gates")]
    assert not long, long
    # the cover says what the reviews asked it to say
    for words in ("fs.protected_hardlinks", "inode_owner_or_capable()", "inode_permission()",
                  "default", "fs/namei.c", "Cc", "BPF", "389da25f93ee"):
        assert words in text, words
    # the v2 changelog names the v2 patches, as posted
    assert posted_cover_section(2, "Changes in v2:") in text


MBOX_V2 = "".join("""From x Thu Jan  1 00:00:00 1970
From: A <a@example.org>
To: linux-security-module@vger.kernel.org
Subject: [PATCH v2 %d/2] %s
Message-ID: <v2-%d@example.org>

body

""" % (n, subject, n) for n, subject in ((0, "security: Yama LSM: x"), (1, "yama: a"),
                                          (2, "yama: b")))


def test_an_older_changelog_names_the_patches_of_its_revision(tmp_path, monkeypatch):
    """[[...]] in changes/vN.txt names a patch of vN: in the v3 cover, the
    v2 changelog's references are numbered as in the recorded v2 posting
    (one to a patch v3 dropped included), the v3 changelog's as in
    series/."""
    cover_letter(tmp_path, monkeypatch,
                 "security: Yama LSM: x\n\nbody\n\n@@TESTING@@\n\n@@CHANGES@@\n", posted_v1=True)
    (tmp_path / "posted" / "v2.mbox").write_text(MBOX_V2)
    (tmp_path / "changes" / "v2.txt").write_text("- New: [[yama: a]] and [[yama: b]].\n")
    (tmp_path / "changes" / "v3.txt").write_text("- Dropped yama: a; [[yama: b]] first.\n")
    text = posting.compose_cover(3, "t", ["yama: b", "yama: c"])
    assert ("Changes in v3:\n- Dropped yama: a; 1/2 first.\n"
            "- Link to v2: https://lore.kernel.org/r/v2-0@example.org\n\n"
            "Changes in v2:\n- New: 1/2 and 2/2.\n"
            "- Link to v1: https://lore.kernel.org/r/cover-v1@example.org" in text), text
    # the newest changelog still fails on a patch series/ does not have
    (tmp_path / "changes" / "v3.txt").write_text("- [[yama: a]] again.\n")
    with pytest.raises(posting.Fail, match="matches none"):
        posting.compose_cover(3, "t", ["yama: b", "yama: c"])


def test_the_v3_changelog_names_the_base_and_patches_of_the_series():
    """changes/v3.txt: the first entry names the base of
    tools/bases/linux-6.12.conf (its package and upstream version), and
    every [[...]] is one patch of series/."""
    conf = dict(l.split("=", 1) for l in open(os.path.join(WS, "tools", "bases",
                                                          "linux-6.12.conf")).read().splitlines()
                if re.match(r"^BASE_(PACKAGE|VERSION)=", l))
    text = open(os.path.join(WS, "cover-letter", "changes", "v3.txt")).read()
    entries = ["- " + e for e in ("\n" + text).split("\n- ")[1:]]
    first = " ".join(entries[0].split())
    assert conf["BASE_PACKAGE"] in first and "v" + conf["BASE_VERSION"].split("-")[0] in first
    assert "[[" not in posting.resolve_refs(text, posting.patch_subjects())


# ------------------------------------------------------------- v2: identity in the patches
PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Yama Developers <yama-dev@example.org>
Date: Thu, 3 Dec 2026 10:00:00 +0000
Subject: [PATCH] yama: x

Body.

Signed-off-by: Yama Developers <yama-dev@example.org>
---
 a | 1 +
diff --git a/a b/a
+Signed-off-by: Yama Developers <yama-dev@example.org>
"""


def test_placeholder_author_and_signoff_become_the_sender(monkeypatch):
    monkeypatch.setattr(posting, "SENDER_NAME", "Jane Doe")
    monkeypatch.setattr(posting, "SENDER_EMAIL", "jane@kernel.org")
    monkeypatch.setattr(posting, "SENDER_SOURCE", "git")
    out = posting.sender_text(PATCH)
    assert "From: Jane Doe <jane@kernel.org>\n" in out
    assert "\nSigned-off-by: Jane Doe <jane@kernel.org>\n---\n" in out
    # the diff is left alone
    assert out.endswith("+Signed-off-by: Yama Developers <yama-dev@example.org>\n")


def test_with_the_placeholder_as_sender_the_patch_is_unchanged(monkeypatch):
    monkeypatch.setattr(posting, "SENDER_NAME", "Yama Developers")
    monkeypatch.setattr(posting, "SENDER_EMAIL", "yama-dev@example.org")
    monkeypatch.setattr(posting, "SENDER_SOURCE", "placeholder")
    assert posting.sender_text(PATCH) == PATCH


def test_a_no_reply_sender_is_a_placeholder_but_still_the_sender(monkeypatch):
    """A reserved or no-reply SENDER is a placeholder (tools/identity), but
    the posting is still From: and signed off by it, not by the built-in
    placeholder: the proof wants the sender on every patch."""
    monkeypatch.setattr(posting, "SENDER_NAME", "Jane Doe")
    monkeypatch.setattr(posting, "SENDER_EMAIL", "jane@users.noreply.github.com")
    monkeypatch.setattr(posting, "SENDER_SOURCE", "placeholder")
    out = posting.sender_text(PATCH)
    assert "From: Jane Doe <jane@users.noreply.github.com>\n" in out
    assert "\nSigned-off-by: Jane Doe <jane@users.noreply.github.com>\n---\n" in out
    assert out.endswith("+Signed-off-by: Yama Developers <yama-dev@example.org>\n")


# ------------------------------------------------------------- Fixes: tags
GOOD_FIXES = 'Fixes: 54a4f0239f2e ("KVM: MMU: make kvm_mmu_zap_page() return the number of pages")'


def fixes_tag(tmp_path, *tags, patch=2):
    """posting.lint's fixes-tag (verdict, detail) on a cover and two patches,
    patch PATCH with the lines TAGS above its Signed-off-by. The tree is an
    empty folder, not even a git repository: the check reads the form only."""
    M, info = 2, []
    for n in range(M + 1):
        body = "cover" if n == 0 else "Commit message.\n\n%sSigned-off-by: Jane Doe " \
            "<jane@kernel.org>\n---\ndiff --git a/a b/a\n" % (
                "".join(t + "\n" for t in tags) if n == patch else "")
        info.append(((n, M, "p%d" % n), email.message_from_string(
            "From: Jane Doe <jane@kernel.org>\nSubject: [PATCH %d/%d] yama: p%d\n\n%s" % (
                n, M, n, body))))
    res = {name: (v, d) for name, v, d in posting.lint(info, str(tmp_path), "base")}
    return res["fixes-tag"]


def test_a_well_formed_fixes_tag_passes_without_the_commit_in_the_base(tmp_path):
    assert fixes_tag(tmp_path, GOOD_FIXES) == (
        "pass", '1 Fixes: tag(s), each Fixes: <12+ lowercase hex digits> ("subject")')
    # a full id, a subject with quotes and parentheses of its own, two tags
    verdict, detail = fixes_tag(tmp_path, "Fixes: %s (\"yama: x\")" % ("0123456789" * 4),
                                'Fixes: 0123456789ab ("Revert "yama: f() (again)"")')
    assert verdict == "pass" and detail.startswith("2 Fixes: tag(s)")
    assert fixes_tag(tmp_path) == (
        "pass", '0 Fixes: tag(s), each Fixes: <12+ lowercase hex digits> ("subject")')


@pytest.mark.parametrize("tag,why", [
    ('Fixes: 54a4f0239f2 ("yama: x")', "has 11 hex digits, not 12 to 40"),
    ('Fixes: %s ("yama: x")' % ("0123456789" * 4 + "a"), "has 41 hex digits"),
    ('Fixes: 54A4F0239F2E ("yama: x")', "the commit id 54A4F0239F2E is not lowercase"),
    ('Fixes: 54a4f0239F2e ("yama: x")', "is not lowercase"),
    ('Fixes: 54a4f0239f2e (yama: x)', "not in double quotes inside parentheses"),
    ('Fixes: 54a4f0239f2e "yama: x"', "not in double quotes inside parentheses"),
    ('Fixes: 54a4f0239f2e yama: x', "not in double quotes inside parentheses"),
    ('Fixes: 54a4f0239f2e ("yama: x"', "not in double quotes inside parentheses"),
    ('Fixes: 54a4f0239f2e', 'no ("subject") after the commit id'),
    ('Fixes: 54a4f0239f2e ("")', "an empty subject"),
    ('Fixes: 54a4f0239f2e ("yama: x") and more', 'text after ("subject")'),
    ('Fixes: 54a4f0239f2e ("yama: x").', 'text after ("subject")'),
    ('Fixes: 54a4f0239f2e ("yama: x") ("yama: y")', 'text after ("subject")'),
    ('Fixes: 54a4f0239f2e ("yama: x") Fixes: 0123456789ab ("yama: y")',
     "more than one Fixes: on the line"),
    ('Fixes:  54a4f0239f2e ("yama: x")', "not one space after Fixes:"),
    ('Fixes: 54a4f0239f2e  ("yama: x")', "not one space between"),
    ('fixes: 54a4f0239f2e ("yama: x")', "the tag is spelt fixes:"),
    ("Fixes: the race in yama_ptrace_access_check", "the commit id the is not hexadecimal"),
    ("Fixes:", "no commit id"),
])
def test_a_malformed_fixes_tag_fails_naming_the_patch(tmp_path, tag, why):
    verdict, detail = fixes_tag(tmp_path, tag)
    assert verdict == "fail"
    head = "patch 2/2: %r is not Fixes: <12+ lowercase hex digits> (\"subject\"): " % tag
    assert detail.startswith(head) and why in detail[len(head):], detail


def test_each_malformed_fixes_tag_is_reported(tmp_path):
    verdict, detail = fixes_tag(tmp_path, GOOD_FIXES, 'Fixes: 54a4f0239f2 ("yama: x")',
                                'Fixes: 54A4F0239F2E ("yama: y")', patch=1)
    assert verdict == "fail"
    bad = detail.split("; ")
    assert len(bad) == 2 and all(b.startswith("patch 1/2: 'Fixes: 54") for b in bad)
    assert "11 hex digits" in bad[0] and "not lowercase" in bad[1]
    assert "54a4f0239f2e" not in detail  # the good one is not named


# ------------------------------------------------------------- v2: To/Cc
def fake_tree(tmp_path, names):
    """A "kernel tree" whose get_maintainer.pl names NAMES for any patch."""
    t = tmp_path / "tree"
    (t / "scripts").mkdir(parents=True)
    (t / "scripts" / "get_maintainer.pl").write_text(
        "print <<'X';\n%s\nX\n" % "\n".join(names))
    return str(t)


def thread(to, cc, files):
    """A cover and one patch to FILES, both sent To: TO, Cc: CC."""
    diff = "".join("diff --git a/%s b/%s\nindex 1..2\n" % (f, f) for f in files)
    return [((n, 1, "x"), email.message_from_string(
        "From: A <a@example.org>\nTo: %s\nCc: %s\nSubject: [PATCH %d/1] x\n"
        "Message-ID: <%d@x>\n\n%s" % (to, cc, n, n, diff if n else ""))) for n in (0, 1)]


def test_recipients_must_include_get_maintainer_and_fsdevel(tmp_path, monkeypatch):
    monkeypatch.setattr(posting, "WORK", str(tmp_path))
    tree = fake_tree(tmp_path, ["Alexander Viro <viro@zeniv.linux.org.uk>",
                                "linux-fsdevel@vger.kernel.org (open list:FILESYSTEMS)"])
    good = thread("Alexander Viro <viro@zeniv.linux.org.uk>", "linux-fsdevel@vger.kernel.org",
                  ["fs/namei.c"])
    assert posting.check_recipients(good, tree) == []
    bad = thread("linux-security-module@vger.kernel.org", "x@y.example", ["fs/namei.c"])
    problems = posting.check_recipients(bad, tree)
    assert any("viro@zeniv.linux.org.uk" in p and "patch 1/1" in p for p in problems)
    assert any("cover" in p and "linux-fsdevel@vger.kernel.org" in p for p in problems)


def test_fsdevel_is_required_even_if_get_maintainer_forgets_it(tmp_path, monkeypatch):
    monkeypatch.setattr(posting, "WORK", str(tmp_path))
    tree = fake_tree(tmp_path, [])
    msgs = thread("linux-security-module@vger.kernel.org", "selinux@vger.kernel.org",
                  ["fs/namei.c", "security/selinux/hooks.c"])
    problems = posting.check_recipients(msgs, tree)
    assert len(problems) == 1 and "linux-fsdevel@vger.kernel.org" in problems[0]


def test_get_maintainer_answer_is_kept_until_an_input_changes(tmp_path, monkeypatch):
    """get_maintainer.pl is asked once per patch and input: the same patch,
    script and MAINTAINERS get the kept answer; a new patch, MAINTAINERS or
    script asks it again."""
    monkeypatch.setattr(posting, "WORK", str(tmp_path))
    tree = pathlib.Path(fake_tree(tmp_path, ["A <a@example.org>"]))
    calls = []
    real_run = posting.run
    monkeypatch.setattr(posting, "run",
                        lambda *a, **k: calls.append(a[0]) or real_run(*a, **k))
    patch = "diff --git a/fs/namei.c b/fs/namei.c\n"

    def calls_after(answer, p=patch):
        """get_maintainer.pl's runs so far, once the answer for P is ANSWER."""
        assert posting.get_maintainer(str(tree), p) == {answer}
        return len(calls)

    assert calls_after("a@example.org") == 1
    assert calls_after("a@example.org") == 1
    (tree / "MAINTAINERS").write_text("M:\tA <a@example.org>\n")
    assert calls_after("a@example.org") == 2
    assert calls_after("a@example.org", patch + "\n") == 3
    (tree / "scripts/get_maintainer.pl").write_text("print <<'X';\nB <b@example.org>\nX\n")
    assert calls_after("b@example.org") == 4
    (tree / ".mailmap").write_text("B <b@example.org> <old@example.org>\n")
    assert calls_after("b@example.org") == 5


# ------------------------------------------------------------- v2: range-diff
def test_subject_pairs_pair_renamed_patches_and_leave_dropped_ones():
    old = [("a", "yama: move the ptrace attach decision into a pure helper"),
           ("b", "yama: choose the default ptrace scope in Kconfig"),
           ("c", "yama: add KUnit tests for the decision helpers")]
    new = [("x", "lsm: pass the mount's idmap to the inode_follow_link hook"),
           ("y", "yama: choose the boot ptrace scope in Kconfig"),
           ("z", "yama: add KUnit tests for the link decisions")]
    pairs = posting.subject_pairs(old, new)
    assert [(i, j) for (i, _), (j, _) in pairs] == [(2, 2), (3, 3)]


def test_v1_preimage_names_every_file_v1_modifies():
    """cover-letter/posted/v1.preimage.tar.xz holds the 6.1 blobs that b4
    diff -m needs for v1 (the 6.1 base is no longer installed)."""
    pre = os.path.join(WS, "cover-letter", "posted", "v1.preimage.tar.xz")
    names = set(tarfile.open(pre).getnames())
    need = set(posting.preimage_files(os.path.join(WS, "cover-letter", "posted", "v1.mbox")))
    assert need and need <= names, need - names
    idx = open(os.path.join(WS, "cover-letter", "posted", "v1.mbox")).read()
    with tarfile.open(pre) as t:
        for n in need:
            data = t.extractfile(n).read()
            blob = subprocess.run(["git", "hash-object", "--stdin"], input=data,
                                  stdout=subprocess.PIPE, check=True).stdout.decode().strip()
            assert "index %s.." % blob[:7] in idx, n


@E2E
def test_record_keeps_preimage_and_numbers_then_range_diff_uses_them(tmp_path):
    s = mkscratch(tmp_path)
    cov = scratch_cover(tmp_path)
    rc, out = run_posting(tmp_path, s, cover_dir=cov)
    assert rc == 0, out
    rc, out = run_posting(tmp_path, s, cover_dir=cov, cmd=("posting", "--record"))
    assert rc == 0, out
    assert (cov / "posted" / "v2.mbox").exists()
    assert (cov / "posted" / "v2.preimage.tar.xz").exists()
    assert (cov / "changes" / "v2.txt").read_text() == "- Scope names (point 1): patch 1/2.\n"
    assert (cov / "changes" / "v3.txt").read_text().startswith("- No change since v2")
    names = tarfile.open(str(cov / "posted" / "v2.preimage.tar.xz")).getnames()
    assert "security/yama/yama_lsm.c" in names
    # nothing changed: still v2, not a new revision
    rc, out = run_posting(tmp_path, s, cover_dir=cov, cmd=("posting", "--record"))
    assert rc != 0 and "already recorded" in out, out
    # a changed cover starts v3; make range-diff compares series/ with v2
    (cov / "cover.txt").write_text((cov / "cover.txt").read_text() + "\nOne more line.\n")
    rc, out = run_posting(tmp_path, s, cover_dir=cov, cmd=("range-diff",))
    assert rc == 0, out
    assert "b4 diff -m v2.mbox" in out and "range-diff: pass" in out
    assert " = " in out  # the same patches: "1:  abc = 1:  def"


def test_sender_stamp_ignores_where_the_identity_came_from(monkeypatch):
    """make check's stages inherit lib.sh's SENDER ("env"), make posting
    reads git config ("git"): the same sender, the same posting; the
    placeholder is another one."""
    monkeypatch.setattr(posting, "SENDER_NAME", "A")
    monkeypatch.setattr(posting, "SENDER_EMAIL", "a@example.org")
    stamps = {}
    for source in ("env", "git", "placeholder"):
        monkeypatch.setattr(posting, "SENDER_SOURCE", source)
        stamps[source] = posting.sender_stamp()
    assert stamps["env"] == stamps["git"] != stamps["placeholder"]
