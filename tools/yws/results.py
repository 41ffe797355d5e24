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


def covers(rec, argv):
    """Whether REC's run answers a request for ARGV: the same command
    line, or a selftests run of every scenario for one of some of them."""
    return argv is None or rec["argv"] == list(argv) or (
        rec["stage"] == "selftests" and rec["argv"] == ["selftests"])


def why_stale(rec, now, argv=None, changed=lambda kind, old, new: []):
    """None when REC passed on the tree and with the workspace's code of
    NOW ({"tree": id, "workspace": id}) for ARGV; else why not, naming what
    changed: CHANGED(kind, old id, new id) lists the paths that differ."""
    if rec is None:
        return "no result"
    if rec["verdict"] != "pass":
        return "it failed: %s" % (rec["summary"] or "no summary")[:120]
    if not covers(rec, argv):
        return "it ran as `%s`, not `%s`" % (" ".join(rec["argv"]), " ".join(argv))
    for kind, what in (("tree", "the tree"), ("workspace", "the workspace's code")):
        if rec[kind] is not None and rec[kind] != now[kind]:
            paths = changed(kind, rec[kind], now[kind])
            return "%s changed since it ran (%s)" % (what, ", ".join(paths[:4]) + " ..." * (
                len(paths) > 4) or "%s -> %s" % (str(rec[kind])[:12], str(now[kind])[:12]))
    return None


def fresh(ws, stage, argv=None):
    """(result, None) when STAGE's last result holds for the author's tree
    and the workspace's code as they are now (and ARGV), else (None, why).
    The one freshness rule: the runner's reuse, the posting's Testing
    section, the review and make send all ask it."""
    from .ws import changed_paths, tree_state, workspace_id
    rec = read(ws.results, stage)
    now = {"tree": tree_state(ws.tree)[0] if (ws.tree / ".git").exists() else None,
           "workspace": workspace_id(ws)}
    why = why_stale(rec, now, argv, lambda kind, old, new: changed_paths(
        ws.tree if kind == "tree" else ws.root, old, new))
    return (None, why) if why else (rec, None)


def remove(results_dir, stage):
    """Forget STAGE's result (a run that starts must not leave an old one)."""
    path(results_dir, stage).unlink(missing_ok=True)
