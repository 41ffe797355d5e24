"""make mutations: can the tests fail? Each patch plants one bug, and the
stage that owns its folder must then fail, naming what failed:
  kunit/mutations/*.patch               kunit: failed cases
  selftests/mutations/*.patch           selftests default (one boot): failed cases
  selftests/vfs-diff/mutations/*.patch  vfs-diff (fixed seed): a group that disagrees
  series/mutations/*.patch              series-check: a gate of the patch ("patch 6/* build")
  selftests/stress/mutations/*.patch    check-debug: what it finds (check_debug.FOUND)
A patch opens with "Must fail: GLOB..." (suite.case, or program/test, under
any scenario/; a series patch's line is one glob): it is caught only when a
case matching one of them failed; other failures alone are "off-target". A
patch that does not apply, a build error or a run that reports nothing is
an "error", never caught.

Each patch is applied to build/mutations/author, a --shared clone of the
tree as it is (HEAD and edits), set afresh for each; a series patch is
folded into the commit its "Into patch: N" line names. The runner starts
the stage with --build build/mutations/build: tree and build/ side by side
as in the workspace, so ccache's relative paths match.
"""
import fnmatch
import json
import re
import time

from . import prep, runner
from .ws import COMMITTER, Stage, StageError, Workspace, git, run, shared_clone, tree_state

FOLDERS = [("kunit/mutations", "kunit", []),
           ("selftests/mutations", "selftests", ["default"]),
           ("selftests/vfs-diff/mutations", "vfs-diff", ["--seed", "20101020", "--cases", "22000"]),
           ("series/mutations", "series-check", []),
           ("selftests/stress/mutations", "check-debug", [])]
TIMEOUT = 3 * 3600     # a hard stop; the stages time their own boots


def must_fail(patch, stage):
    """The globs of the patch's "Must fail:" line (series-check: the line
    is one glob); for vfs-diff, any group of the differential test (not a
    boot problem)."""
    first = patch.read_text().partition("\n")[0]
    if first.startswith("Must fail:"):
        globs = first[len("Must fail:"):].strip()
        return [globs] if stage == "series-check" else globs.split()
    return ["yama_vfs_diff/*"] if stage == "vfs-diff" else None


def fold(tree, patch):
    """PATCH folded into commit N of TREE's series ("Into patch: N"): N
    amended, the later commits picked on top; what does not apply is an error."""
    m = re.search(r"^Into patch: *(\d+)$", patch.read_text(), re.M)
    commits, n = prep.patches(tree), int(m[1]) if m else 0
    if not 1 <= n <= len(commits):
        raise StageError("%s: no 'Into patch: N' line, N of 1..%d" % (patch.name, len(commits)))
    if git(tree, "status", "--porcelain"):
        raise StageError("the tree has uncommitted edits: series-check judges commits")
    git(tree, "checkout", "-q", "--detach", commits[n - 1])
    git(tree, "apply", "--index", patch)
    git(tree, "commit", "-q", "--amend", "--no-edit")
    for n, c in enumerate(commits[n:], n + 1):
        if run(["git", "-C", tree, "cherry-pick", c], env=COMMITTER, capture=True,
               check=False).returncode:
            git(tree, "cherry-pick", "--abort", check=False)
            raise StageError("%s: patch %d does not apply over it" % (patch.name, n))


def judge(must, rec):
    """(result, detail) of one mutation from the stage's published result."""
    if rec is None:
        return "error", "the stage published no result"
    bad = [c["name"] for c in rec["details"].get("failed_cases", [])]
    hit = [b for b in bad if any(fnmatch.fnmatchcase(b, g) for m in must for g in (m, "*/" + m))]
    if hit:
        return "caught", "%s failed%s" % (hit[0], " (+%d more)" % (len(bad) - 1) if len(bad) > 1 else "")
    if bad:
        return "off-target", "%s failed, none of %s" % (bad[0], " ".join(must))
    if rec["verdict"] == "pass":
        return "missed", "the stage passed (%d passed)" % rec["passed"]
    return "error", rec["summary"][:120] or "failed without a failed case"


def checkout(ws, build):
    """BUILD/author, a --shared clone of the tree set to the tree as it is
    (HEAD, then its edits and new files as uncommitted changes)."""
    tid = tree_state(ws.tree)[0]        # its objects: in the tree, shared
    dest = shared_clone(ws.tree, build / ws.tree.name, "refs/mutations/head")
    git(dest, "checkout", "-q", "-f", "--detach", "refs/mutations/head")
    git(dest, "clean", "-qfd")
    git(dest, "read-tree", "-u", "--reset", tid)
    return dest


def prove(ws, patch, stage, args, must, build):
    """Run STAGE with PATCH applied to a checkout of the tree as it is, its
    results in BUILD; (result, detail)."""
    out = build / patch.stem
    out.mkdir(parents=True, exist_ok=True)
    (out / "log").unlink(missing_ok=True)
    try:
        tree = checkout(ws, build)
        mws = Workspace(ws.root, build=build / "build", out=build / "out", tree=tree,
                        series=ws.series, base=ws.base)
        fold(tree, patch) if stage == "series-check" else git(tree, "apply", patch)
        rec = runner.run_stage(mws, stage, args, rerun=True, log=out / "log", timeout=TIMEOUT)
    except StageError as e:
        return "error", str(e)
    (out / "result.json").write_text(json.dumps(rec, indent=1))
    return judge(must, rec)


def mutations(ws):
    """[(patch, stage, args)] of every folder, in name order."""
    return [(p, stage, args) for folder, stage, args in FOLDERS
            for p in sorted((ws.root / folder).glob("*.patch"))]


def report(st, rows):
    """Count the rows into the stage and say what was not caught."""
    st.passed = sum(r["result"] == "caught" for r in rows)
    st.failed = len(rows) - st.passed
    st.details = {"mutations": rows, "failed_cases": [
        {"name": r["name"], "reason": "%s: %s" % (r["result"], r["detail"])}
        for r in rows if r["result"] != "caught"]}
    st.summary = ("every mutation caught" if not st.failed else
                  "not caught: " + ", ".join(r["name"] for r in rows if r["result"] != "caught"))


def main(ws, args):
    todo = [m for m in mutations(ws) if not args.names or m[0].stem in args.names]
    with Stage(ws, "mutations") as st:
        if not todo:
            raise StageError("no mutation named %s" % " ".join(args.names))
        rows, build = [], ws.dir("mutations")
        for patch, stage, sargs in todo:
            must, start = must_fail(patch, stage), time.time()
            res = prove(ws, patch, stage, sargs, must, build) if must else \
                ("error", "no 'Must fail:' line")
            rows.append({"name": patch.stem, "stage": stage, "result": res[0], "detail": res[1],
                         "seconds": round(time.time() - start)})
            st.progress("%-10s %-38s %-12s %5ds  %s" % (res[0], patch.stem, stage,
                                                      rows[-1]["seconds"], res[1]))
        report(st, rows)
    return st.exit_code


def add_arguments(p):
    p.add_argument("names", nargs="*", metavar="NAME", help="only these patches (file names without .patch)")


COMMANDS = {"mutations": ("plant one bug at a time (a rule broken, a patch that does not build alone, ...): "
                          "the stage that owns it must fail "
                          "(MUTATIONS=\"a b\": only these)",
                          add_arguments, main)}
