import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from yws.ws import Workspace  # noqa: E402


def sh(*cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(autouse=True)
def own_git_config(tmp_path, monkeypatch):
    """No test reads the developer's git config: no SMTP server of theirs
    (make send), no identity hiding a bug of a user who has none."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.fixture
def repo(tmp_path):
    """A tiny git tree: tag "base", two commits on top."""
    t = tmp_path / "linux"
    t.mkdir()
    sh("git", "init", "-q", "-b", "main", cwd=t)
    sh("git", "config", "user.name", "T", cwd=t)
    sh("git", "config", "user.email", "t@example.org", cwd=t)
    (t / "a.c").write_text("int a;\n")
    sh("git", "add", ".", cwd=t)
    sh("git", "commit", "-qm", "base", cwd=t)
    sh("git", "tag", "base", cwd=t)
    for i in (1, 2):
        (t / "a.c").write_text("int a%d;\n" % i)
        sh("git", "commit", "-qam", "change %d" % i, cwd=t)
    return t


@pytest.fixture
def ws(tmp_path, repo):
    w = Workspace(build=tmp_path / "build", out=tmp_path / "out", tree=repo,
                  series=tmp_path / "series")
    w.argv = ["x"]
    return w
