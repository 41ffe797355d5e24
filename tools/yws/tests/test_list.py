"""The mailing list loop on the workspace's own list (public-inbox and an
SMTP sink on 127.0.0.1, tools/yws/inbox.py), with the real b4 0.12: both
series sent, the link series fetched and reviewed by message-id, a
maintainer's replies collected by make trailers, the next revision sent
and range-diffed from the archive; and each bad input."""
import argparse
import email
import email.policy
import shutil
import smtplib

import pytest

from test_posting import ME, commit, fake_results, make_ws, post
from yws import cover as CV, inbox, posting, prep, results, review, send, trailers
from yws.ws import Workspace, git

LSM = "linux-security-module@vger.kernel.org"


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Both series posted (v1), once: b4 is slow to start."""
    top = tmp_path_factory.mktemp("template")
    w = make_ws(top)
    fake_results(w)
    assert post(w) == 0
    return top


@pytest.fixture
def ws(template, tmp_path, monkeypatch):
    """A copy of the template of the test's own (its recorded paths moved
    along), b4's cache private; the list stopped at the end."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    top = tmp_path / "c"
    shutil.copytree(template, top, symlinks=True)
    for f in list(top.glob("ws/build/results/*.json")) + list(top.glob("ws/out/**/*.json")):
        f.write_text(f.read_text().replace(str(template), str(top)))
    w = Workspace(top / "ws", tree=top / "linux", series=top / "ws" / "series", sender=ME)

    def base_tree(ws, dest):     # the tiny tree's base, as deps gives the kernel's
        shutil.rmtree(dest, ignore_errors=True)
        git(tmp_path, "clone", "-q", "--no-checkout", w.tree, dest)
        git(dest, "checkout", "-q", "--detach", "base")
        git(dest, "tag", "-f", "base", "HEAD")
    monkeypatch.setattr(review.deps, "base_tree", base_tree)
    yield w
    inbox.stop(w)
    assert not list((w.build / "list").glob("state.json"))


def sent(ws):
    return send.stage_send(ws, None)


def summary(ws, stage):
    return results.read(ws.results, stage)["summary"]


def reply(lst, to, text, frm="Kees Cook <kees@kernel.org>", msgid="r1@kernel.org"):
    """A reply to the message TO, sent over SMTP to the list."""
    m = email.message.EmailMessage(policy=email.policy.SMTP.clone(max_line_length=998))
    m["From"], m["To"], m["Subject"] = frm, LSM, "Re: " + " ".join(str(to["Subject"]).split())
    m["Message-ID"], m["Date"] = "<%s>" % msgid, email.utils.formatdate()
    m["In-Reply-To"] = m["References"] = to["Message-ID"]
    m.set_content("> quoted\n\n%s\n" % text)
    with smtplib.SMTP("127.0.0.1", lst["smtp_port"]) as s:
        s.send_message(m)


def thread(ws, name, rev):
    return posting.thread_of(ws.out / "posting" / name / ("v%d" % rev) / "thread.mbox")


def msgs_of(ws, name):
    return {git(ws.tree, "log", "-1", "--format=%s", c): git(ws.tree, "log", "-1", "--format=%B", c)
            for c in prep.layout(ws.tree, "b4/" + name)[-1][2]}


def test_the_whole_loop_on_the_local_list(ws):
    lst = inbox.start(ws)
    fixes, link = thread(ws, "yama-fixes", 1), thread(ws, "yama-lsm", 1)
    # send: the proven messages as they are, fixes first; recorded
    assert sent(ws) == 0, summary(ws, "send")
    for t in (fixes, link):
        got = inbox.archive(lst, t[0][4]["Message-ID"])
        assert got and all(p[4]["Message-ID"].encode() in got for p in t)
    assert [m["Message-ID"] for m in inbox.mailbox(ws, "kees@kernel.org")] == [
        p[4]["Message-ID"] for p in fixes]
    for name in ("yama-fixes", "yama-lsm"):
        assert CV.posted_revisions(ws, name) == [1]
    people = sorted(p.name for p in (ws.build / "list" / "mail").iterdir())
    assert people == ["ann@kernel.org", "kees@kernel.org"], "no Message-ID among the recipients"
    # the maintainer: the link series by message-id, its prerequisite first
    cid = link[0][4]["Message-ID"].strip("<>")
    assert review.stage_review(ws, argparse.Namespace(msgid=cid, mbox=None)) == 0
    rows = results.read(ws.results, "review")["details"]["rows"]
    assert "after its prerequisite %s" % fixes[0][4]["Message-ID"].strip("<>") in rows[0]
    assert git(review.workspace(ws).tree, "rev-parse", "HEAD^{tree}") == \
        git(ws.tree, "rev-parse", "HEAD^{tree}")
    # replies: Reviewed-by to 1/2, Acked-by to the cover -> make trailers
    reply(lst, link[1][4], "Reviewed-by: Kees Cook <kees@kernel.org>")
    reply(lst, link[0][4], "Acked-by: Paul Moore <paul@paul-moore.com>",
          frm="Paul Moore <paul@paul-moore.com>", msgid="r2@paul-moore.com")
    reply(lst, link[2][4], "Why this line?", msgid="r3@kernel.org")
    assert trailers.stage_trailers(ws, argparse.Namespace(mbox=None)) == 0, summary(ws, "trailers")
    m = msgs_of(ws, "yama-lsm")
    assert "Reviewed-by: Kees Cook" in m["yama: first change"]
    assert "Reviewed-by" not in m["yama: second change"]
    assert all(x.count("Acked-by: Paul Moore") == 1 for x in m.values())
    assert not any("Acked-by" in x for x in msgs_of(ws, "yama-fixes").values())
    rec = results.read(ws.results, "trailers")["details"]
    assert rec["commits_changed"] == 2 and [c[1] for c in rec["comments"]] == [
        "Re: " + str(link[2][4]["Subject"])]
    assert "Reviewed-by: Kees Cook" in (ws.series / "0003-yama-first-change.patch").read_text()
    assert trailers.stage_trailers(ws, argparse.Namespace(mbox=None)) == 0
    assert results.read(ws.results, "trailers")["details"]["commits_changed"] == 0, "once"
    assert not results.read(ws.results, "trailers")["details"]["unapplied"]
    # the next revision: sent, and b4 diff from the archive shows the change
    commit(ws.tree, "yama: third change", "int d;")
    (ws.root / "cover-letter" / "yama-lsm" / "changes" / "v2.txt").write_text(
        "- Added [[third change]].\n")
    fake_results(ws)
    assert post(ws) == 0 and sent(ws) == 0, summary(ws, "send")
    assert results.read(ws.results, "send")["details"]["sent"][0][:2] == ["yama-lsm", 2]
    v2 = thread(ws, "yama-lsm", 2)[0][4]["Message-ID"].strip("<>")
    assert review.stage_review(ws, argparse.Namespace(msgid=v2, mbox=None)) == 0
    diff = (review.workspace(ws).tree.parent / "range-diff.txt").read_text()
    assert "yama: third change" in diff and "Reviewed-by: Kees Cook" in diff


def test_review_of_an_unknown_message_id_says_so(ws):
    inbox.start(ws)
    assert review.stage_review(ws, argparse.Namespace(msgid="nope@example.org", mbox=None)) == 1
    assert "not known" in summary(ws, "review")


def test_review_of_a_thread_that_lacks_a_patch_names_it(ws):
    lst = inbox.start(ws)
    link = thread(ws, "yama-lsm", 1)
    emls = sorted((ws.out / "posting" / "yama-lsm" / "v1").glob("*.eml"))
    with smtplib.SMTP("127.0.0.1", lst["smtp_port"]) as s:
        for p in (emls[0], emls[2]):
            s.sendmail("ann@kernel.org", [LSM], p.read_bytes().replace(b"\n", b"\r\n"))
    assert review.stage_review(ws, argparse.Namespace(
        msgid=link[0][4]["Message-ID"].strip("<>"), mbox=None)) == 1
    assert "lacks patch(es) [1] of 2" in summary(ws, "review")


def test_trailers_from_a_reply_to_an_older_revision(ws):
    """b4 carries a trailer to the same patch in a later revision, never
    to a patch that changed since."""
    lst = inbox.start(ws)
    assert sent(ws) == 0
    v1 = thread(ws, "yama-lsm", 1)
    y = ws.tree / "security" / "yama" / "y.c"
    y.write_text(y.read_text().replace("int c;", "int c2;"))
    git(ws.tree, "commit", "-q", "-a", "--amend", "--no-edit")
    fake_results(ws)
    (ws.root / "cover-letter" / "yama-lsm" / "changes" / "v2.txt").write_text("- Changed.\n")
    assert post(ws) == 0 and sent(ws) == 0
    reply(lst, v1[1][4], "Reviewed-by: Kees Cook <kees@kernel.org>", msgid="o1@kernel.org")
    reply(lst, v1[2][4], "Reviewed-by: Kees Cook <kees@kernel.org>", msgid="o2@kernel.org")
    assert trailers.stage_trailers(ws, argparse.Namespace(mbox=None)) == 0
    m = msgs_of(ws, "yama-lsm")
    assert "Reviewed-by: Kees Cook" in m["yama: first change"]
    assert "Reviewed-by" not in m["yama: second change"], "the patch changed since v1"
    lost = results.read(ws.results, "trailers")["details"]["unapplied"]
    assert [x[1] for x in lost] == ["Re: " + str(v1[2][4]["Subject"])], "said, not lost"


def test_trailers_from_an_mbox_of_replies_only(ws, tmp_path):
    link = thread(ws, "yama-lsm", 1)
    m = email.message.EmailMessage(policy=email.policy.SMTP.clone(max_line_length=998))
    m["From"], m["Subject"] = "Kees Cook <kees@kernel.org>", "Re: " + str(link[1][4]["Subject"])
    m["Message-ID"], m["In-Reply-To"] = "<x1@kernel.org>", link[1][4]["Message-ID"]
    m["Date"] = email.utils.formatdate()
    m.set_content("Reviewed-by: Kees Cook <kees@kernel.org>\n")
    mbox = tmp_path / "replies.mbox"
    mbox.write_bytes(b"From x Thu Jan  1 00:00:00 1970\n" + m.as_bytes() + b"\n")
    before = msgs_of(ws, "yama-lsm")
    assert trailers.stage_trailers(ws, argparse.Namespace(mbox=str(mbox))) == 1
    assert "holds replies only and yama-lsm has no recorded revision" in summary(ws, "trailers")
    assert msgs_of(ws, "yama-lsm") == before, "nothing changed"
    assert [posting.record(ws, d) for d in posting.unposted(ws)]
    assert trailers.stage_trailers(ws, argparse.Namespace(mbox=str(mbox))) == 0
    assert "Reviewed-by: Kees Cook" in msgs_of(ws, "yama-lsm")["yama: first change"]


def test_send_when_the_server_refuses_a_recipient_then_resume(ws):
    inbox.start(ws, refuse=["kees@kernel.org"])
    assert sent(ws) == 1
    why = summary(ws, "send")
    assert "message 1/3" in why and "except to kees@kernel.org (550" in why, why
    assert not CV.posted_revisions(ws, "yama-fixes"), "nothing recorded half"
    first = thread(ws, "yama-fixes", 1)[0][4]["Message-ID"]
    assert post(ws) == 0, "make again: a partly sent series is kept as it was proven"
    assert thread(ws, "yama-fixes", 1)[0][4]["Message-ID"] == first
    inbox.stop(ws)
    lst = inbox.start(ws)
    assert sent(ws) == 0, summary(ws, "send")
    for name in ("yama-fixes", "yama-lsm"):
        t = thread(ws, name, 1)
        got = inbox.archive(lst, t[0][4]["Message-ID"])
        assert all(p[4]["Message-ID"].encode() in got for p in t), "the proven messages"
        assert got.count(t[0][4]["Message-ID"].encode()) >= 1
    kees = [m["Message-ID"] for m in inbox.mailbox(ws, "kees@kernel.org")]
    assert kees == [p[4]["Message-ID"] for p in thread(ws, "yama-fixes", 1)[1:]], "once each"


def test_send_when_the_connection_drops_mid_series_then_resume(ws):
    inbox.start(ws, drop_after=2)
    assert sent(ws) == 1
    why = summary(ws, "send")
    assert "message 3/3" in why and "was NOT sent" in why and "2 sent before it" in why, why
    assert not CV.posted_revisions(ws, "yama-fixes")
    inbox.stop(ws)
    lst = inbox.start(ws)
    assert sent(ws) == 0, summary(ws, "send")
    t = thread(ws, "yama-fixes", 1)
    assert t[2][4]["Message-ID"].encode() in inbox.archive(lst, t[0][4]["Message-ID"])


def test_send_when_the_list_is_not_running_or_the_sender_is_a_placeholder(ws, monkeypatch):
    lst = inbox.start(ws)
    import os
    import signal
    os.kill(lst["pids"]["smtp"], signal.SIGKILL)
    assert sent(ws) == 1 and "not running" in summary(ws, "send")
    inbox.stop(ws)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(ws.root / "gitconfig"))
    assert sent(ws) == 1 and "sendemail.smtpserver" in summary(ws, "send")
    git(ws.root, "config", "--global", "sendemail.smtpserver", "smtp.example.org")
    ws.sender = "Seed <maintainers@users.noreply.a-seed.example>"
    git(ws.tree, "config", "user.email", "maintainers@users.noreply.a-seed.example")
    shutil.rmtree(ws.out / "posting")
    assert post(ws) == 0, "a placeholder posts, with its warning"
    assert sent(ws) == 1 and "is From: maintainers@users.noreply.a-seed.example, a " \
        "placeholder" in summary(ws, "send"), "refused before any connection"
    assert not CV.posted_revisions(ws, "yama-fixes")


def test_send_refuses_a_posting_the_tree_has_moved_past(ws):
    git(ws.tree, "commit", "-q", "--amend", "-m", "yama: second change\n\nReworded.\n\n"
        "Signed-off-by: " + ME)
    assert sent(ws) == 1 and "changed since its posting was proven" in summary(ws, "send")
