"""The kernel reports that fail a test run whatever its tests said: one list
for every stage that reads a console (selftests/ktap.py for the QEMU boots,
tools/kunit for kunit.py's test.log)."""

import re

# (pattern, kind); a console line matching a pattern is a report.
REPORTS = [
    (re.compile(r"\bBUG[: ]"), "BUG"),
    (re.compile(r"\bWARNING:"), "WARNING"),
    (re.compile(r"\bOops\b"), "Oops"),
    (re.compile(r"Kernel panic"), "Kernel panic"),
    (re.compile(r"\bKASAN\b"), "KASAN"),
    (re.compile(r"\bUBSAN:"), "UBSAN"),
    (re.compile(r"lockdep is turned off|turning off the locking correctness"
                r"|MAX_LOCKDEP_\w+ too low"), "lockdep"),
    (re.compile(r"suspicious RCU usage|possible (circular|recursive) locking"
                r"|inconsistent lock state"), "lockdep"),
    (re.compile(r"sleeping function called"), "atomic sleep"),
    (re.compile(r"general protection fault|Unable to handle kernel"),
     "fault"),
    (re.compile(r"INFO: task .* blocked|soft lockup|hard LOCKUP|RCU stall"
                r"|rcu_preempt detected stalls"), "hang"),
    (re.compile(r"\bcut here\b"), "report"),
]


def scan(text):
    """The lines of TEXT that report a kernel problem, each prefixed with
    its kind ("KASAN: ...")."""
    bad = []
    for line in text.splitlines():
        for pattern, kind in REPORTS:
            if pattern.search(line):
                bad.append("%s: %s" % (kind, line.strip()))
                break
    return bad
