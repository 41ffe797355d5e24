"""Kernel reports in a console log: the one home of their patterns.

Any report fails the stage that read the console, whatever its tests said.
"""
import re

# (kind, pattern), the more specific first: "BUG: KASAN: ..." is KASAN.
PATTERNS = [(kind, re.compile(p)) for kind, p in [
    ("KASAN", r"\bKASAN\b"),
    ("KFENCE", r"\bKFENCE\b"),
    ("UBSAN", r"\bUBSAN:"),
    ("lockdep", r"possible (circular|recursive) locking|inconsistent lock state"
                r"|lockdep is turned off|MAX_LOCKDEP_\w+ too low"),
    ("RCU", r"suspicious RCU usage|rcu_\w+ detected stalls|RCU stall"),
    ("atomic sleep", r"sleeping function called from invalid context"),
    ("BUG", r"\bBUG[: ]"),
    ("WARNING", r"\bWARNING:"),
    ("Oops", r"\bOops\b|general protection fault|Unable to handle kernel"),
    ("panic", r"Kernel panic"),
    ("hang", r"INFO: task .* blocked|soft lockup|hard LOCKUP"),
]]


def scan(text):
    """The lines of TEXT that report a kernel problem, as "KIND: line"."""
    found = []
    for line in text.splitlines():
        kind = next((k for k, p in PATTERNS if p.search(line)), None)
        if kind:
            found.append("%s: %s" % (kind, line.strip()[:200]))
    return found


def failures(text, name):
    """The reports of TEXT as failed cases named NAME (the console's)."""
    return [{"name": name, "reason": s} for s in scan(text)]
