"""make send: each series of the proven posting not recorded yet, in
order, its messages as they are (b4 send would make new Message-IDs and
dates: what the proof applied would not be what goes out), over the SMTP
connection b4 sets up from git's sendemail.* (b4.get_smtp): the local
list's while it runs, else the user's. A refused recipient or a dropped
connection stops it; out/posting/NAME/vN/sent keeps what went out, make
send resumes after it. A series sent whole is recorded as posted."""
import contextlib
import email
import email.utils
import hashlib
import os
import smtplib
from pathlib import Path

import b4

from . import inbox, posting, sender
from .ws import Stage, StageError, git, git_env


@contextlib.contextmanager
def b4_in(tree, env):
    """b4's library in TREE with ENV (its config caches reset)."""
    old_env, old_cwd = dict(os.environ), os.getcwd()
    os.environ.update(env)
    os.chdir(tree)
    b4.SENDEMAIL_CONFIG = b4.USER_CONFIG = b4.MAIN_CONFIG = None
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(old_env)
        os.chdir(old_cwd)
        b4.SENDEMAIL_CONFIG = b4.USER_CONFIG = b4.MAIN_CONFIG = None


def destination(ws, frm):
    """(git config pairs, where) the messages From: FRM go."""
    lst = inbox.state(ws)
    if lst:
        return inbox.config(lst), "the local list (SMTP 127.0.0.1:%d, archive %s); to send " \
            "for real: make list-stop, then make send" % (lst["smtp_port"], lst["http"])
    pairs = dict(ln.split(" ", 1) for ln in git(ws.root, "config", "--global", "--get-regexp",
                                                r"^sendemail\.", check=False).splitlines())
    if not pairs.get("sendemail.smtpserver"):
        raise StageError("no local list runs (make list) and git has no sendemail.smtpserver: "
                         "set yours (README, Sending) to send for real")
    if sender.placeholder_reasons(frm):
        raise StageError("the posting is From: %s, a placeholder (%s): it goes to the local list "
                         "only (make list); with a real identity, make again, then make send"
                         % (frm, "; ".join(sender.placeholder_reasons(frm))))
    return list(pairs.items()), "%s (git config --global sendemail.*)" % pairs[
        "sendemail.smtpserver"]


def send_series(ws, d, pairs):
    """The messages of posting D not sent yet, in order; how many went out."""
    log, n = Path(d["dir"]) / "sent", 0
    done = log.read_text().split() if log.exists() else []
    emls = sorted(Path(d["dir"]).glob("*.eml"))
    where = "%s v%d: message %%d/%d (%%s)" % (d["name"], d["revision"], len(emls))
    with b4_in(ws.tree, git_env(pairs)):
        smtp, frm = b4.get_smtp()
    if isinstance(smtp, list):
        raise StageError("sendemail.smtpserver is a command (%s): make send speaks SMTP"
                         % " ".join(smtp))
    with contextlib.closing(smtp):
        for i, p in enumerate(emls, 1):
            msg = email.message_from_bytes(p.read_bytes())
            if msg["Message-ID"] in done:
                continue
            if hashlib.sha256(p.read_bytes()).hexdigest() != d["sha256"].get(p.name):
                raise StageError("%s is not the message the posting proved: make, then "
                                 "make send" % p)
            rcpts = sorted({a for _, a in email.utils.getaddresses(
                msg.get_all("To", []) + msg.get_all("Cc", []))})
            try:
                refused = smtp.sendmail(frm, rcpts, p.read_bytes().replace(
                    b"\r\n", b"\n").replace(b"\n", b"\r\n"))
            except (smtplib.SMTPException, OSError) as e:
                raise StageError("%s was NOT sent: %s; %d sent before it (%s); make send "
                                 "resumes with it" % (where % (i, p.name), e, len(done) + n, log))
            with log.open("a") as f:
                f.write(msg["Message-ID"] + "\n")
            n += 1
            print("  sent " + p.name, flush=True)
            if refused:
                raise StageError("%s went out, except to %s; the messages after it were NOT "
                                 "sent; make send resumes with the next" % (
                                     where % (i, p.name), "; ".join(
                                         "%s (%d %s)" % (a, c, m.decode(errors="replace"))
                                         for a, (c, m) in refused.items())))
        smtp.quit()
    return n


def stage_send(ws, args):
    with Stage(ws, "send") as st:
        todo = posting.unposted(ws)
        if not todo:
            raise StageError("every series of the posting is recorded as posted: nothing to send")
        for d in todo:
            if git(ws.tree, "rev-list", "--reverse", "base..b4/" + d["name"]).split() != \
                    d["commits"]:
                raise StageError("b4/%s changed since its posting was proven: make, then make "
                                 "send" % d["name"])
        first = sorted(Path(todo[0]["dir"]).glob("*.eml"))[0]
        pairs, where = destination(ws, email.utils.parseaddr(
            email.message_from_bytes(first.read_bytes())["From"])[1])
        print("  sending %s to %s" % (", ".join("%s v%d" % (d["name"], d["revision"])
                                                for d in todo), where), flush=True)
        for d in todo:
            st.passed += send_series(ws, d, pairs)
            print("  " + posting.record(ws, d), flush=True)
        st.details = {"sent": [[d["name"], d["revision"], d["msgid"]] for d in todo],
                      "to": where}
        st.summary = "%s sent to %s, recorded" % (", ".join(
            "%s v%d <%s>" % (d["name"], d["revision"], d["msgid"]) for d in todo), where)
    return st.exit_code


COMMANDS = {"send": ("send the proven posting's messages as they are (the local list while "
                     "it runs, else git's sendemail.*), then record each series as posted",
                     None, stage_send)}
