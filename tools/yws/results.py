"""build/results/<stage>.json: the one reader and writer of stage results.

A result says what a stage found and on which tree: verdict, counts,
seconds, the git tree id of the working tree it tested (edits included),
whether that tree had uncommitted edits, the command line, the workspace id
of the test code, a one-line summary and stage-specific details.
"""
import json
import os
import time
from pathlib import Path

KEYS = ("stage", "verdict", "passed", "failed", "skipped", "seconds", "tree",
        "dirty", "argv", "workspace", "summary", "details", "finished")
VERDICTS = ("pass", "fail", "skip")


def path(results_dir, stage):
    return Path(results_dir) / (stage + ".json")


def write(results_dir, stage, *, verdict, passed, failed, skipped, seconds,
          tree, dirty, argv, workspace, summary, details):
    """Write the result of STAGE atomically and return its path."""
    if verdict not in VERDICTS:
        raise ValueError("unknown verdict %r" % verdict)
    rec = {"stage": stage, "verdict": verdict, "passed": int(passed),
           "failed": int(failed), "skipped": int(skipped),
           "seconds": round(float(seconds), 1), "tree": tree,
           "dirty": bool(dirty), "argv": list(argv), "workspace": workspace,
           "summary": summary, "details": details or {},
           "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    p = path(results_dir, stage)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, p)
    return p


def read(results_dir, stage):
    """The result of STAGE, or None when there is none or it is unreadable."""
    try:
        rec = json.loads(path(results_dir, stage).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or any(k not in rec for k in KEYS):
        return None
    return rec


def fresh(results_dir, stage, tree_id, workspace=None):
    """The result of STAGE if it passed on exactly TREE_ID (and, when
    given, with the test code of WORKSPACE), else None."""
    rec = read(results_dir, stage)
    if rec and rec["verdict"] == "pass" and rec["tree"] == tree_id and \
            workspace in (None, rec["workspace"]):
        return rec
    return None


def remove(results_dir, stage):
    """Forget STAGE's result (a run that starts must not leave an old one)."""
    path(results_dir, stage).unlink(missing_ok=True)
