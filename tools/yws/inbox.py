"""The workspace's own mailing lists on 127.0.0.1 (make list): public-inbox-httpd serves
them, tools/yws/smtp-sink archives list mail and keeps the rest in build/list/mail/<addr>/."""
import contextlib
import gzip
import json
import mailbox as maildir
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .ws import PYTHON, StageError, git, run

LISTS = {"linux-security-module@vger.kernel.org": "linux-security-module",
         "linux-fsdevel@vger.kernel.org": "linux-fsdevel",
         "selinux@vger.kernel.org": "selinux", "bpf@vger.kernel.org": "bpf",
         "stable@vger.kernel.org": "stable", "linux-kernel@vger.kernel.org": "linux-kernel",
         "linux-doc@vger.kernel.org": "linux-doc",
         "linux-kselftest@vger.kernel.org": "linux-kselftest"}
MAIN = "linux-security-module"   # the inbox b4's midmask/searchmask point at


def _alive(pid):
    """PID is a server of a list: not a zombie, not a reused pid (the cmdline is
    empty while it execs or exits, then it is the list's)."""
    with contextlib.suppress(OSError):
        cmd, stat = (Path("/proc/%d/%s" % (pid, f)).read_bytes() for f in ("cmdline", "stat"))
        return stat.rsplit(b")", 1)[1].split()[0] not in b"ZX" and (
            not cmd or b"public-inbox-httpd" in cmd or b"smtp-sink" in cmd)
    return False


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listens(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def state(ws):
    f = ws.build / "list" / "state.json"
    if not f.exists():
        return None
    st = json.loads(f.read_text())
    for name, pid in st["pids"].items():
        if not _alive(pid):
            raise StageError("the local list in %s was started but is not running (%s pid %d gone): "
                             "make list-stop; make list" % (st["dir"], name, pid))
    return st


def start(ws, refuse=(), drop_after=None):
    if st := state(ws):
        return st
    d, ports = ws.dir("list"), {"httpd": _port(), "smtp": _port()}
    env = {"PI_CONFIG": str(d / "config"), "PI_EMERGENCY": str(d / "emergency")}
    if not (d / "config").exists():     # all inboxes or none: made under config.new
        shutil.rmtree(d / "inboxes", ignore_errors=True)
        for addr, name in LISTS.items():
            run(["public-inbox-init", "-V2", "-L", "full", name, d / "inboxes" / name,
                 "http://127.0.0.1/%s/" % name, addr], log=d / "init.log",
                env={**env, "PI_CONFIG": str(d / "config.new")})
        git(d, "config", "-f", d / "config.new", "publicinboxmda.spamcheck", "none")
        os.rename(d / "config.new", d / "config")
    cmds = {"httpd": ["public-inbox-httpd", "-W0", "-l", "http://127.0.0.1:%d" % ports["httpd"]],
            "smtp": [PYTHON, Path(__file__).parent / "smtp-sink", "--port", ports["smtp"], "--dir", d]
            + [f for a in LISTS for f in ("--list", a)] + [f for a in refuse for f in ("--refuse", a)]
            + (["--drop-after", drop_after] if drop_after is not None else [])}
    st = {"http": "http://127.0.0.1:%d" % ports["httpd"], "smtp_port": ports["smtp"],
          "dir": str(d), "pids": {}, "lists": LISTS}
    for name, cmd in cmds.items():
        with open(d / (name + ".log"), "w") as log:
            st["pids"][name] = subprocess.Popen(
                list(map(str, cmd)), env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                stdout=log, stderr=log, start_new_session=True).pid
        (d / "state.json").write_text(json.dumps(st, indent=1) + "\n")   # stop() finds it
    deadline = time.time() + 10
    while not all(map(_listens, ports.values())):
        if time.time() > deadline or not all(map(_alive, st["pids"].values())):
            stop(ws)
            raise StageError("the list's servers are not listening on 127.0.0.1:%d and :%d, see "
                             "%s/httpd.log, smtp.log" % (*ports.values(), d))
        time.sleep(0.05)
    return st


def stop(ws):
    f = ws.build / "list" / "state.json"
    if not f.exists():
        return False
    pids = json.loads(f.read_text())["pids"]
    for wait, sig in ((5, None), (5, signal.SIGTERM), (10, signal.SIGKILL)):
        for name, pid in pids.items():
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig or (signal.SIGQUIT if name == "httpd" else signal.SIGTERM))
        end = time.time() + wait
        while any(map(_alive, pids.values())) and time.time() < end:
            time.sleep(0.05)
    for pid in pids.values():
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)     # reaped, if it was our child
    f.unlink()
    return True


def config(st):
    url = "%s/%s/" % (st["http"], MAIN)
    return [("b4.midmask", url + "%s"), ("b4.linkmask", url + "%s/"),
            ("b4.searchmask", url + "?x=m&t=1&q=%s"), ("b4.cache-expire", "0"),
            ("sendemail.smtpserver", "127.0.0.1"), ("sendemail.smtpserverport", str(st["smtp_port"])),
            ("sendemail.smtpencryption", ""), ("sendemail.smtpuser", ""), ("sendemail.from", "")]


def mailbox(ws, addr):     # Maildir keys start with seconds.Mmicroseconds
    d = ws.build / "list" / "mail" / addr.lower()
    box = maildir.Maildir(d, create=False) if d.is_dir() else {}
    order = sorted(box.keys(), key=lambda k: [int(n) for n in re.match(r"(\d+)\.M(\d+)", k).groups()])
    return [box[k] for k in order]


def archive(st, msgid):
    url = "%s/%s/%s/t.mbox.gz" % (st["http"], MAIN, urllib.parse.quote(msgid.strip("<>"), safe="@"))
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return gzip.decompress(r.read())
    except urllib.error.HTTPError as e:
        if e.code != 404:
            raise
    return None


def seed(ws, st):
    """The revisions recorded as posted (cover-letter/*/posted/) into the
    archive of the LSM list, where lore has them: b4 diff finds the revision
    before a new one there. Once, on a new archive; messages it has are kept."""
    n = 0
    for mbox in sorted(ws.root.glob("cover-letter/*/posted/v*.mbox")):
        for m in maildir.mbox(mbox, create=False):
            subprocess.run(["public-inbox-mda"], input=m.as_bytes(), capture_output=True, env={
                **os.environ, "PI_CONFIG": st["dir"] + "/config", "PI_EMERGENCY": st["dir"] +
                "/emergency", "ORIGINAL_RECIPIENT": "linux-security-module@vger.kernel.org"})
            n += 1
    return n


def _list(ws, args):
    new = not (ws.build / "list" / "config").exists()
    st = start(ws)
    if new:
        print("the archive of the LSM list: %d messages of the recorded postings" % seed(ws, st))
    print("list archives: " + ", ".join("%s/%s/" % (st["http"], n) for n in LISTS.values()))
    print("SMTP: 127.0.0.1:%d (mail to others: %s/mail/<address>/)" % (st["smtp_port"], st["dir"]))
    print("b4 and make send/review/trailers use it while it runs; make list-stop stops it")
    return 0


def _list_stop(ws, args):
    print("stopped the local list in %s" % (ws.build / "list") if stop(ws) else "no local list ran")
    return 0


COMMANDS = {"list": ("start the workspace's own mailing lists on 127.0.0.1 (HTTP, SMTP)", None, _list),
            "list-stop": ("stop the local list of make list", None, _list_stop)}
