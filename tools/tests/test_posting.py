"""Tests of tools/posting (tools/gates/posting.py).

Fast tests use temporary files only. The end-to-end tests run b4 in the
posting tree on a scratch series and need build/linux; they run with
RUN_POSTING_TESTS=1 (about 10 s each):
    RUN_POSTING_TESTS=1 python3 -m pytest -q tools/tests/test_posting.py
"""
import os
import shutil
import subprocess
import sys

import pytest

WS = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("WS", WS)
sys.path.insert(0, os.path.join(WS, "tools", "gates"))
import posting  # noqa: E402

E2E = pytest.mark.skipif(os.environ.get("RUN_POSTING_TESTS") != "1",
                         reason="runs b4 in build/posting; set RUN_POSTING_TESTS=1")


def test_parse_subject():
    assert posting.parse_subject("[PATCH v2 3/7] yama: x") == (3, 7, "yama: x")
    assert posting.parse_subject("[PATCH 0/7]\n security: Yama LSM: y") == (0, 7, "security: Yama LSM: y")
    assert posting.parse_subject("[PATCH] yama: x") is None


def test_testing_section_without_results_says_not_run(tmp_path, monkeypatch):
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    text = posting.testing_section("0" * 40)
    assert text.count("not run in this workspace") == 3


def test_testing_section_reads_results(tmp_path, monkeypatch):
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    (tmp_path / "series-check.json").write_text(
        '{"tip_tree": "t", "passed": 40, "failed": 0, "patches": ["a", "b"]}')
    (tmp_path / "kunit.json").write_text('{"passed": 12, "failed": 0, "skipped": 1}')
    (tmp_path / "selftests.json").write_text(
        '{"scenarios": {"default": {"passed": 9, "failed": 0}, "landlock": {"passed": 9, "failed": 0}}}')
    text = posting.testing_section("t")
    assert "40 cells passed, 0 failed over 2 patches" in text
    assert "12 passed, 0 failed, 1 skipped" in text
    assert "- default: 9 passed, 0 failed" in text and "- landlock:" in text
    assert "not run" not in text


def write_cover(d, body):
    (d / "changes").mkdir(parents=True, exist_ok=True)
    (d / "cover.txt").write_text(body)
    (d / "changes" / "v1.txt").write_text("- First posting.\n")


def test_cover_with_editme_fails(tmp_path, monkeypatch):
    write_cover(tmp_path, "security: Yama LSM: x\n\nEDITME: describe\n\n@@TESTING@@\n")
    monkeypatch.setattr(posting, "COVER_DIR", str(tmp_path))
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    with pytest.raises(posting.Fail, match="EDITME"):
        posting.compose_cover(1, "t")


def test_cover_subject_must_start_with_security_yama(tmp_path, monkeypatch):
    write_cover(tmp_path, "yama: x\n\nbody\n\n@@TESTING@@\n")
    monkeypatch.setattr(posting, "COVER_DIR", str(tmp_path))
    with pytest.raises(posting.Fail, match="security: Yama LSM"):
        posting.compose_cover(1, "t")


MBOX_V1 = """From x Thu Jan  1 00:00:00 1970
From: A <a@example.org>
To: linux-security-module@vger.kernel.org
Subject: [PATCH 0/1] security: Yama LSM: x
Message-ID: <cover-v1@example.org>

cover

"""


def test_v2_cover_has_changes_and_link_to_v1(tmp_path, monkeypatch):
    write_cover(tmp_path, "security: Yama LSM: x\n\nbody\n\n@@TESTING@@\n\n@@CHANGES@@\n")
    (tmp_path / "changes" / "v2.txt").write_text("- Fixed the thing.\n")
    (tmp_path / "posted").mkdir()
    (tmp_path / "posted" / "v1.mbox").write_text(MBOX_V1)
    monkeypatch.setattr(posting, "COVER_DIR", str(tmp_path))
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    assert posting.current_revision() == 2
    text = posting.compose_cover(2, "t")
    assert "Changes in v2:\n- Fixed the thing.\n- Link to v1: https://lore.kernel.org/r/cover-v1@example.org" in text


def test_missing_changelog_for_v2_is_editme(tmp_path, monkeypatch):
    write_cover(tmp_path, "security: Yama LSM: x\n\nbody\n\n@@TESTING@@\n")
    (tmp_path / "posted").mkdir()
    (tmp_path / "posted" / "v1.mbox").write_text(MBOX_V1)
    monkeypatch.setattr(posting, "COVER_DIR", str(tmp_path))
    monkeypatch.setattr(posting, "RESULTS", str(tmp_path))
    with pytest.raises(posting.Fail, match="EDITME"):
        posting.compose_cover(2, "t")


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


def run_posting(tmp_path, series, cover_dir=None, extra=None):
    env = dict(os.environ, SERIES_DIR=str(series), POSTING_OUT=str(tmp_path / "out"))
    if cover_dir:
        env["COVER_DIR"] = str(cover_dir)
    env.update(extra or {})
    p = subprocess.run([os.path.join(WS, "tools/posting")], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


@E2E
def test_posting_of_a_scratch_series_passes_its_proof(tmp_path):
    rc, out = run_posting(tmp_path, mkscratch(tmp_path))
    assert rc == 0, out
    assert "git am onto base" in out and "b4 --offline-mode am" in out
    emls = sorted(os.listdir(tmp_path / "out" / "v1"))
    assert emls[0].startswith("0000-") and "thread.mbox" in emls


@E2E
def test_posting_with_editme_cover_fails(tmp_path):
    cov = tmp_path / "cover"
    shutil.copytree(os.path.join(WS, "cover-letter"), cov)
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
