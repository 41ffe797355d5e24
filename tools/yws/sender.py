"""Who sends the posting: the sender identity (its one home) and why a
placeholder cannot send."""
import re

from .ws import StageError, git


PLACEHOLDER = ("Yama Developers", "yama-dev@example.org")
RESERVED = ("example", "invalid", "test", "localhost")


def placeholder_reasons(addr):
    """Why ADDR cannot send the posting (empty when it can)."""
    addr = addr.lower()
    domain = addr.rsplit("@", 1)[-1].rstrip(".")
    why = []
    if addr == PLACEHOLDER[1]:
        why.append("it is the workspace's built-in placeholder")
    if "noreply" in addr or "no-reply" in addr:
        why.append("it is a no-reply address: replies and reviews cannot reach it")
    labels = domain.split(".")
    if labels[-1] in RESERVED or ".".join(labels[-2:]) in (
            "example.com", "example.net", "example.org"):
        why.append("its domain %s is reserved (RFC 2606, RFC 6761) and takes no mail" % domain)
    return why


def identity(ws):
    """(name, address, source) of the sender, like b4: --sender "Name <addr>",
    else the workspace's git config user.name/user.email, else the
    placeholder. source is "sender", "git" or "placeholder"."""
    if ws.sender:
        m = re.match(r"^\s*([^<>]*[^<>\s])\s+<([^<>@\s]+@[^<>@\s]+)>\s*$", ws.sender)
        if not m:
            raise StageError("--sender %r is not of the form \"Name <address>\"" % ws.sender)
        return m.group(1), m.group(2), "sender"
    name = git(ws.root, "config", "--get", "user.name", check=False)
    addr = git(ws.root, "config", "--get", "user.email", check=False)
    if name and addr:
        return name, addr, "git"
    return PLACEHOLDER + ("placeholder",)


def sendable(ident):
    return not placeholder_reasons(ident[1])


def warning(ident):
    """The WARNING lines when IDENT is a placeholder, else ""."""
    why = placeholder_reasons(ident[1])
    if not why:
        return ""
    lines = ["the posting is NOT sendable as it stands: it is From: and Signed-off-by:",
             "\"%s <%s>\", a placeholder, not a sender:" % ident[:2]]
    lines += ["  - " + w for w in why]
    lines += ["It comes from %s." % {"sender": "--sender (make SENDER=...)",
                                     "git": "git config user.name/user.email",
                                     "placeholder": "nothing: no SENDER, no git config"}[ident[2]],
              "Give a real one (git config --global user.name/user.email) or run",
              "make SENDER=\"Name <address>\", then make again."]
    return "\n".join("WARNING: " + ln for ln in lines)
