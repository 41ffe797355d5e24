"""The workspace: its paths, running commands, the tree id, stages."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

from . import results

PYTHON = "/usr/bin/python3"
ROOT = Path(__file__).resolve().parents[2]
COMMITTER = {"GIT_COMMITTER_NAME": "Yama Workspace",
             "GIT_COMMITTER_EMAIL": "yama-workspace@localhost"}


def git_env(pairs):
    """The environment that gives git the config PAIRS [(key, value), ...]."""
    env = {"GIT_CONFIG_COUNT": str(len(pairs))}
    for i, (key, value) in enumerate(pairs):
        env["GIT_CONFIG_KEY_%d" % i], env["GIT_CONFIG_VALUE_%d" % i] = key, str(value)
    return env


# b4's throwaway commits (b4 am, b4 diff) need an identity; the user may have none.
SCRATCH_PAIRS = [("user.name", "Yama Workspace"), ("user.email", "yama-workspace@localhost")]
SCRATCH = git_env(SCRATCH_PAIRS)

# Every kernel build of the workspace passes the same flags, so ccache
# shares objects between the gates, KUnit and the test kernel: W=1's
# compiler warnings without its kernel-doc run per object (the kernel-doc
# gate checks touched files), and ld.lld (a third of GNU ld's link time).
KBUILD_FLAGS = ["W=1", "cmd_checkdoc=", "LD=ld.lld"]
PROGRESS_SECONDS = 30


class StageError(Exception):
    """A stage cannot go on; the message is the one-line reason."""


class Workspace:
    """Where everything is. Every path comes from here, given as flags."""

    def __init__(self, root=ROOT, build=None, out=None, tree=None,
                 series=None, base="linux-6.12", sender=None):
        self.root = Path(root).resolve()
        self.build = Path(build or self.root / "build").resolve()
        self.out = Path(out or self.root / "out").resolve()
        self.tree = Path(tree or self.root / "author").resolve()
        self.series = Path(series or self.root / "series").resolve()
        self.base = base
        self.sender = sender
        self.results = self.build / "results"

    def dir(self, name):
        d = self.build / name
        d.mkdir(parents=True, exist_ok=True)
        return d


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _progress(proc, label, start):
    while proc.poll() is None:
        try:
            proc.wait(timeout=PROGRESS_SECONDS)
        except subprocess.TimeoutExpired:
            print("  %s: still running (%ds)" % (label, time.time() - start),
                  flush=True)


def _interrupted(signum, frame):
    raise KeyboardInterrupt


def run(cmd, *, cwd=None, env=None, log=None, label=None, timeout=None,
        check=True, capture=False, input=None):
    """Run CMD in its own process group, with a progress line every 30 s.

    The whole group is killed on timeout, interrupt or SIGTERM. With
    check, a non-zero exit raises StageError naming LABEL and LOG.
    """
    cmd = [str(c) for c in cmd]
    label = label or os.path.basename(cmd[0])
    full_env = dict(os.environ, **{k: str(v) for k, v in (env or {}).items()})
    out = err = None
    logf = None
    if log:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        logf = open(log, "a")
        out, err = logf, subprocess.STDOUT
    elif capture:
        out = err = subprocess.PIPE
    sys.stdout.flush()
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=out,
                            stderr=err, text=True, start_new_session=True,
                            stdin=subprocess.PIPE if input is not None
                            else subprocess.DEVNULL)
    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGTERM, _interrupted)
    ticker = threading.Thread(target=_progress, args=(proc, label, start),
                              daemon=True)
    try:
        if not capture:
            ticker.start()
        stdout, stderr = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise StageError("%s: no result after %ds (killed)%s" % (
            label, timeout, ", see %s" % log if log else ""))
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
        if logf:
            logf.close()
    res = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if check and res.returncode != 0:
        where = ", see %s" % log if log else ""
        if capture and not log and (stderr or "").strip():
            where = ": " + stderr.strip().splitlines()[-1]
        raise StageError("%s: exit %d%s" % (label, res.returncode, where))
    return res


def git(repo, *args, check=True, env=None, input=None):
    """git in REPO with the workspace's fixed committer; stdout, stripped."""
    res = subprocess.run(["git", "-C", str(repo), *map(str, args)],
                         env={**os.environ, **COMMITTER, **(env or {})},
                         capture_output=True, text=True, input=input)
    if check and res.returncode:
        raise StageError("git %s in %s: %s" % (
            args[0], repo, res.stderr.strip() or "exit %d" % res.returncode))
    return res.stdout.strip()


def b4(cwd, *args, env=None, label=None, online=False):
    """b4 ARGS in CWD (offline unless ONLINE: then it reads the archive
    its b4.midmask/searchmask name); its output. A failure names it."""
    res = run(["b4", *([] if online else ["--offline-mode"]), "--no-stdin", *args], cwd=cwd,
              env=env, capture=True, check=False, label=label)
    if res.returncode:
        raise StageError("b4 %s: exit %d: %s" % (" ".join(map(str, args)), res.returncode,
                                                 (res.stdout + res.stderr).strip()[-400:]))
    return (res.stdout + res.stderr).strip()


def shared_clone(tree, dest, ref):
    """DEST, a --shared clone of TREE (TREE's objects, a checkout of its
    own), made once; REF set to TREE's HEAD. DEST."""
    dest = Path(dest)
    if not (dest / ".git").is_dir():
        run(["git", "clone", "-q", "--shared", "--no-checkout", tree, dest],
            label="git clone")
        git(dest, "config", "gc.auto", "0")
    git(dest, "fetch", "-q", "--no-tags", tree, "+HEAD:" + ref)
    return dest


def index_tree(tree, tracked=False, drop=()):
    """The git tree id of TREE's working tree, edits included (of tracked
    files only, if TRACKED), without the paths DROP: written from a copy of
    its index, the real index is left alone."""
    gitdir = Path(git(tree, "rev-parse", "--absolute-git-dir"))
    with tempfile.TemporaryDirectory(dir=gitdir, prefix="yws-") as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        if (gitdir / "index").exists():
            shutil.copy(gitdir / "index", env["GIT_INDEX_FILE"])
        git(tree, "add", "-u" if tracked else "-A", env=env)
        if drop:
            git(tree, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *drop, env=env)
        return git(tree, "write-tree", env=env)


def tree_state(tree):
    """(git tree id of TREE's working tree, edits included; dirty flag)."""
    tid = index_tree(tree)
    return tid, tid != git(tree, "rev-parse", "-q", "--verify", "HEAD^{tree}", check=False)


# What decides no verdict: the series and its cover (results name their
# tree), notes and prose; the rest of the tracked files, edits included, do.
PROSE = [":(glob)series/*.patch", "series/series", "cover-letter", "notes", "*.md"]


def workspace_id(ws):
    """The git tree id of the tracked files that decide a verdict, as they
    are: an untracked file (a log, a note) or an edit of prose changes
    nothing, and two ids diff to the files that changed."""
    return index_tree(ws.root, tracked=True, drop=PROSE)


def changed_paths(repo, old, new):
    """The paths that differ between two tree ids of REPO ([] if unknown)."""
    res = subprocess.run(["git", "-C", str(repo), "diff-tree", "-r", "--name-only", old, new],
                         capture_output=True, text=True)
    return res.stdout.split() if res.returncode == 0 else []


def kbuild_env(ws):
    """ccache for kernel builds, keyed on paths relative to the workspace."""
    return {"CCACHE_BASEDIR": str(ws.root), "CCACHE_NOHASHDIR": "1"}


class Stage:
    """Context manager owning one stage's run and its published result."""

    def __init__(self, ws, name, detail="", tree=..., argv=None):
        self.ws, self.name, self.detail = ws, name, detail
        self.tree = ws.tree if tree is ... else tree
        self.argv = list(getattr(ws, "argv", sys.argv[1:]) if argv is None
                         else argv)
        self.passed = self.failed = self.skipped = 0
        self.summary, self.details, self.verdict = "", {}, None
        self.tree_id, self.dirty = None, False
        self.exit_code = 1

    def __enter__(self):
        from .__main__ import commands      # each stage's description: its help line
        about = commands().get(self.argv[0] if self.argv else self.name, ("",))[0]
        print("== %s: %s" % (self.name, "; ".join(filter(None, (about, self.detail)))), flush=True)
        self.start, self.workspace = time.time(), workspace_id(self.ws)
        results.remove(self.ws.results, self.name)
        if self.tree is not None:
            if not (Path(self.tree) / ".git").exists():
                self._publish("fail", "no kernel tree at %s (make prep)"
                              % self.tree)
                raise SystemExit(1)
            self.tree_id, self.dirty = tree_state(self.tree)
        return self

    def progress(self, msg):
        print("  " + msg, flush=True)

    def __exit__(self, etype, exc, tb):
        if etype is None and self.tree is not None and self.tree_id and \
                tree_state(self.tree)[0] != self.tree_id:
            etype, exc = StageError, StageError(
                "the tree changed during the run: its result would name a "
                "tree it did not test; run the stage again")
        if etype is None and workspace_id(self.ws) != self.workspace:
            etype, exc = StageError, StageError(
                "the workspace's code changed during the run (%s): run the stage again"
                % ", ".join(changed_paths(self.ws.root, self.workspace, workspace_id(self.ws))))
        if etype is None:
            if self.failed:
                verdict = "fail"
            elif self.verdict == "skip":
                verdict = "skip"
            elif not self.passed:
                verdict = "fail"
                self.summary = self.summary or (
                    "nothing passed (%d skipped)" % self.skipped
                    if self.skipped else "nothing was tested")
            else:
                verdict = "pass"
        elif issubclass(etype, StageError):
            verdict, self.summary = "fail", str(exc)
            print("error: %s: %s" % (self.name, exc), file=sys.stderr)
        elif issubclass(etype, KeyboardInterrupt):
            verdict, self.summary = "fail", "interrupted"
        else:
            traceback.print_exception(etype, exc, tb)
            verdict, self.summary = "fail", "%s: %s" % (etype.__name__, exc)
        self._publish(verdict, self.summary)
        self.exit_code = 0 if verdict in ("pass", "skip") else 1
        return etype is not None and issubclass(etype, StageError)

    def _publish(self, verdict, summary):
        secs = time.time() - getattr(self, "start", time.time())
        failed = self.failed or (1 if verdict == "fail" else 0)
        results.write(self.ws.results, self.name, verdict=verdict,
                      passed=self.passed, failed=failed,
                      skipped=self.skipped, seconds=secs, tree=self.tree_id,
                      dirty=self.dirty, argv=self.argv,
                      workspace=getattr(self, "workspace", None) or workspace_id(self.ws),
                      summary=summary,
                      details=self.details)
        print("== %s: %s (%d passed, %d failed%s) in %ds%s" % (
            self.name, verdict, self.passed, failed,
            ", %d skipped" % self.skipped if self.skipped else "", secs,
            ": " + summary if summary else ""), flush=True)
