"""inbox.py and smtp-sink: the workspace's own list on 127.0.0.1 (public-inbox)."""
import gzip
import os
import signal
import smtplib
import subprocess
import time
import urllib.parse
import urllib.request
from email.message import EmailMessage
from pathlib import Path

import pytest

from yws import inbox
from yws.ws import SCRATCH_PAIRS, StageError, Workspace, git_env

LSM = "linux-security-module@vger.kernel.org"
PATCH = """The link check, made stricter.

Signed-off-by: A U Thor <author@example.org>
---
diff --git a/a.c b/a.c
index 0000000..1111111 100644
--- a/a.c
+++ b/a.c
@@ -1 +1 @@
-int a;
+int b;
"""


def message(mid, to=LSM, cc=None, subject="[PATCH] yama: a stricter link check", body=PATCH):
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = "A U Thor <author@example.org>", to, subject
    m["Date"], m["Message-ID"] = "Mon, 01 Jan 2024 00:00:00 +0000", "<%s>" % mid
    if cc:
        m["Cc"] = cc
    m.set_content(body)
    return m


def smtp(st):
    return smtplib.SMTP("127.0.0.1", st["smtp_port"], timeout=30)


def ours(tmp_path):
    """Running processes that belong to this test's list: the sink names
    its folder; the httpd and mda children read PI_CONFIG from it."""
    found = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            text = (p / "cmdline").read_bytes() + (p / "environ").read_bytes()
        except OSError:
            continue
        if str(tmp_path).encode() in text and int(p.name) != os.getpid():
            found.append(int(p.name))
    return found


@pytest.fixture
def lst(tmp_path):
    """start(**flags) -> (ws, state) of a list under tmp_path; always stopped,
    and no process of it may be left."""
    ws = Workspace(build=tmp_path / "build", out=tmp_path / "out")
    yield lambda **kw: (ws, inbox.start(ws, **kw))
    inbox.stop(ws)
    assert not (tmp_path / "build" / "list" / "state.json").exists()
    assert ours(tmp_path) == []


def test_a_patch_is_archived_found_by_b4_and_delivered_to_the_cc(lst, tmp_path):
    ws, st = lst()
    assert inbox.start(ws) == st and inbox.state(ws) == st      # running: the same list
    with smtp(st) as s:
        assert s.send_message(message("p1@example.org", cc="Kees <Kees@Example.org>")) == {}
    assert b"Message-ID: <p1@example.org>" in inbox.archive(st, "<p1@example.org>")
    assert inbox.archive(st, "nope@example.org") is None
    got = inbox.mailbox(ws, "kees@example.org")
    assert [m["Message-ID"] for m in got] == ["<p1@example.org>"]
    assert inbox.mailbox(ws, "nobody@example.org") == []
    cfg = dict(inbox.config(st))
    q = urllib.parse.quote_plus('s:"stricter link check"')        # a phrase: needs -L full
    with urllib.request.urlopen(urllib.request.Request(
            cfg["b4.searchmask"] % q, data=b"", method="POST"), timeout=30) as r:
        assert b"<p1@example.org>" in gzip.decompress(r.read())
    out = tmp_path / "am"
    out.mkdir()
    # b4 am exits 1 silently with no identity (HOME is empty): SCRATCH_PAIRS too
    env = {**os.environ, "HOME": str(tmp_path / "home"), **git_env(inbox.config(st) + SCRATCH_PAIRS)}
    res = subprocess.run(["b4", "--no-stdin", "am", "-o", out, "p1@example.org"], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Link: %s/linux-security-module/p1@example.org/" % st["http"] in res.stdout + res.stderr
    mbx = list(out.glob("*.mbx"))
    assert len(mbx) == 1 and "+int b;" in mbx[0].read_text()


def test_listens_on_loopback_only_and_stop_leaves_nothing(lst, tmp_path):
    t = time.time()
    ws, st = lst()
    started = time.time() - t
    ss = subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout.splitlines()
    for name, pid in st["pids"].items():
        mine = [ln.split()[3] for ln in ss if "pid=%d," % pid in ln]
        assert mine and all(a.startswith("127.0.0.1:") for a in mine), (name, mine)
    assert {int(a.rsplit(":", 1)[1]) for ln in ss for a in [ln.split()[3]]
            if any("pid=%d," % p in ln for p in st["pids"].values())} == {
        st["smtp_port"], int(st["http"].rsplit(":", 1)[1])}
    t = time.time()
    assert inbox.stop(ws) is True
    print("start %.1fs, stop %.1fs" % (started, time.time() - t))
    assert ours(tmp_path) == [] and inbox.state(ws) is None
    assert not any(Path("/proc/%d" % p).exists() for p in st["pids"].values())
    assert inbox.stop(ws) is False


def test_a_refused_recipient_is_refused_and_the_rest_delivered(lst):
    ws, st = lst(refuse=["Gone@example.org"])
    with smtp(st) as s:
        refused = s.sendmail("author@example.org", [LSM, "gone@example.org"],
                             message("r1@example.org").as_bytes())
        assert refused == {"gone@example.org": (550, b"5.1.1 <gone@example.org>: no such user")}
        with pytest.raises(smtplib.SMTPRecipientsRefused):
            s.sendmail("author@example.org", ["gone@example.org"], message("r2@example.org").as_bytes())
    assert inbox.archive(st, "r1@example.org") and inbox.archive(st, "r2@example.org") is None
    assert inbox.mailbox(ws, "gone@example.org") == []


def test_drop_after_cuts_the_connection_and_keeps_running(lst):
    ws, st = lst(drop_after=1)
    with smtp(st) as s:
        s.send_message(message("d1@example.org"))
        with pytest.raises(smtplib.SMTPServerDisconnected):
            s.send_message(message("d2@example.org"))
    assert inbox.archive(st, "d1@example.org") and inbox.archive(st, "d2@example.org") is None
    assert inbox.state(ws) == st
    with smtp(st) as s:                       # still listening, still dropping
        with pytest.raises(smtplib.SMTPServerDisconnected):
            s.send_message(message("d3@example.org"))


def test_state_of_a_list_that_died(lst, tmp_path):
    ws, st = lst()
    os.kill(st["pids"]["httpd"], signal.SIGKILL)
    for _ in range(100):
        try:
            inbox.state(ws)
        except StageError as e:
            assert "pid %d gone" % st["pids"]["httpd"] in str(e)
            assert "make list-stop; make list" in str(e)
            break
        time.sleep(0.05)
    else:
        pytest.fail("state() did not notice the dead httpd")
    with pytest.raises(StageError, match="make list"):
        inbox.start(ws)


def test_mail_public_inbox_would_drop_gets_a_550(lst):
    """mda exits 0 and archives nothing when the list is only in the
    envelope (not To/Cc): the sender must hear of it."""
    ws, st = lst()
    with smtp(st) as s:
        with pytest.raises(smtplib.SMTPDataError) as e:
            s.sendmail("author@example.org", [LSM, "kees@example.org"],
                       message("b1@example.org", to="kees@example.org").as_bytes())
    assert e.value.smtp_code == 550 and b"did not archive" in e.value.smtp_error
    assert inbox.archive(st, "b1@example.org") is None
    assert inbox.mailbox(ws, "kees@example.org") == []       # all or nothing
