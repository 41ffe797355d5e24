"""Tests of tools/fetch-base (make deps, make tree): the base tarball of
tools/bases/linux-6.12.conf from `apt-get source --download-only`, through
the workspace's own apt configuration under $BUILD/apt, checked against the
SHA-256 of the package's .dsc.

apt-get is a fake on PATH (FAKE_APT): `indextargets` lists the archives of
a pretend machine, `update` writes its lists where the apt configuration in
APT_CONFIG says (else into the pretend machine's /var/lib/apt/lists, FAKE_ROOT),
`source --download-only PKG=VERSION` writes the .dsc, the .orig.tar.xz and
the .debian.tar.xz into the current folder, named as the Debian archive
names them. Every call is logged with its folder and APT_CONFIG. BUILD is
a temporary folder: nothing of build/ is touched."""
import hashlib
import json
import os
import pathlib
import re
import subprocess
import textwrap

import pytest

WS = pathlib.Path(os.environ["WS"])  # conftest.py
CONF = WS / "tools/bases/linux-6.12.conf"

FAKE_APT = textwrap.dedent(r'''
    #!/usr/bin/env python3
    import hashlib, json, os, re, sys
    args = sys.argv[1:]
    root = os.environ["FAKE_ROOT"]
    with open(os.path.join(root, "apt-get.log"), "a") as f:
        f.write(json.dumps({"args": args, "cwd": os.getcwd(),
                            "APT_CONFIG": os.environ.get("APT_CONFIG")}) + "\n")
    cmd = next(a for a in args if not a.startswith("-"))

    def conf(key, default):
        """A setting of the apt configuration in APT_CONFIG."""
        path = os.environ.get("APT_CONFIG")
        text = open(path).read() if path else ""
        m = re.search(r'^%s "([^"]*)";$' % re.escape(key), text, re.M)
        return m.group(1) if m else os.path.join(root, default)

    if cmd == "indextargets":
        # the machine's archives (deb lines only), one line per index
        print(os.environ.get("FAKE_ARCHIVES",
                             "http://deb.example.org/debian/ bookworm\n"
                             "http://deb.example.org/debian-security/ bookworm-security"))
    elif cmd == "update":
        lists = conf("Dir::State::Lists", "var/lib/apt/lists")
        os.makedirs(lists, exist_ok=True)
        src = open(conf("Dir::Etc::SourceList", "etc/apt/sources.list")).read()
        with open(os.path.join(lists, "Sources"), "w") as f:
            f.write(src)
    elif cmd == "source":
        lists = os.path.join(conf("Dir::State::Lists", "var/lib/apt/lists"), "Sources")
        if not os.path.exists(lists) or not re.search(r"^deb-src .* bookworm-security main$",
                                                      open(lists).read(), re.M):
            print("E: You must put some 'deb-src' URIs in your sources.list", file=sys.stderr)
            sys.exit(100)
        if "--download-only" not in args:
            sys.exit("the fake unpacks nothing")
        pkg, version = args[-1].split("=")
        version = version.split(":", 1)[-1]            # no epoch in file names
        upstream = version.rsplit("-", 1)[0]
        orig = "%s_%s.orig.tar.xz" % (pkg, upstream)
        deb = "%s_%s.debian.tar.xz" % (pkg, version)
        mode = os.environ.get("FAKE_APT_SOURCE", "good")
        data = {orig: os.environ.get("FAKE_TARBALL", "the tarball").encode(), deb: b"debian/"}
        sums = {n: hashlib.sha256(d).hexdigest() for n, d in data.items()}
        if mode == "badsum":
            sums[orig] = hashlib.sha256(b"another tarball").hexdigest()
        for name, d in data.items():
            with open(name, "wb") as f:
                f.write(d if mode != "fail" else d[:3])
        if mode == "fail":
            print("E: Failed to fetch %s  404  Not Found" % orig, file=sys.stderr)
            sys.exit(100)
        with open("%s_%s.dsc" % (pkg, version), "w") as f:
            f.write("Format: 3.0 (quilt)\nSource: %s\nVersion: %s\n" % (pkg, version))
            # another checksum of the same file first: only SHA-256 counts
            f.write("Checksums-Sha1:\n")
            for name, d in data.items():
                f.write(" %s %d %s\n" % (hashlib.sha1(d).hexdigest(), len(d), name))
            f.write("Checksums-Sha256:\n")
            for name, d in data.items():
                f.write(" %s %d %s\n" % (sums[name], len(d), name))
            f.write("Files:\n")
            for name, d in data.items():
                f.write(" %s %d %s\n" % (hashlib.md5(d).hexdigest(), len(d), name))
    else:
        sys.exit("fake apt-get: %s?" % cmd)
''').lstrip()


def described():
    """BASE_PACKAGE and BASE_VERSION of the base description."""
    return dict(re.findall(r"^(BASE_PACKAGE|BASE_VERSION|BASE_SUITE)=(\S+)$",
                           CONF.read_text(), re.M))


@pytest.fixture
def top(tmp_path):
    """tmp_path with the fake apt-get in bin/, the pretend machine in root/,
    the build folder in build/ and a working folder elsewhere/."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/apt-get").write_text(FAKE_APT)
    (tmp_path / "bin/apt-get").chmod(0o755)
    for d in ("root", "build", "elsewhere", "home"):
        (tmp_path / d).mkdir()
    return tmp_path


def fetch(top, **extra):
    env = dict(os.environ, BUILD=str(top / "build"), BASE_CONF=str(CONF),
               FAKE_ROOT=str(top / "root"), HOME=str(top / "home"),
               PATH="%s:%s" % (top / "bin", os.environ["PATH"]), **extra)
    env.pop("APT_CONFIG", None)
    return subprocess.run([str(WS / "tools/fetch-base")], env=env, cwd=top / "elsewhere",
                          capture_output=True, text=True)


def calls(top):
    log = top / "root/apt-get.log"
    calls = [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def names(top):
    d = described()
    upstream = d["BASE_VERSION"].split(":", 1)[-1].rsplit("-", 1)[0]
    base = top / "build/base"
    return (base / ("%s_%s.orig.tar.xz" % (d["BASE_PACKAGE"], upstream)),
            base / ("%s_%s.dsc" % (d["BASE_PACKAGE"], d["BASE_VERSION"].split(":", 1)[-1])))


def files(top, under):
    return sorted(str(p.relative_to(top)) for p in (top / under).rglob("*"))


def test_the_base_description_is_a_source_package_of_a_suite():
    d = described()
    assert d["BASE_PACKAGE"] == "linux-6.12" and d["BASE_SUITE"]
    # the recorded base id is for the described version (make tree checks it)
    assert (WS / "tools/bases/linux-6.12.id").read_text().split()[0] == d["BASE_VERSION"]


def test_fetch_verifies_and_stays_in_build(top):
    """(a) the tarball and the .dsc are fetched and checked; (d) nothing is
    written outside $BUILD: apt-get update and source read and write only
    the apt configuration under $BUILD/apt, source runs in a folder under
    $BUILD, the machine's apt folders and the current folder stay as they
    were."""
    tarball, dsc = names(top)
    proc = fetch(top, FAKE_TARBALL="linux source")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tarball.read_text() == "linux source"
    sha = hashlib.sha256(b"linux source").hexdigest()
    assert " %s " % sha in dsc.read_text()
    assert "SHA-256 %s, as in %s" % (sha, dsc.name) in proc.stdout
    build = top / "build"
    apt = build / "apt"
    log = calls(top)
    assert [next(a for a in c["args"] if not a.startswith("-")) for c in log] == [
        "indextargets", "update", "source"]
    # the machine's sources are only read (indextargets, with its own
    # configuration); update and source use the workspace's
    assert log[0]["APT_CONFIG"] is None
    for c in log[1:]:
        assert c["APT_CONFIG"] == str(apt / "apt.conf")
    assert log[2]["args"][-2:] == ["--download-only", "%s=%s" % (
        described()["BASE_PACKAGE"], described()["BASE_VERSION"])]
    assert pathlib.Path(log[2]["cwd"]).is_relative_to(build)
    conf = (apt / "apt.conf").read_text()
    for key in ("Dir::Etc::SourceList", "Dir::Etc::SourceParts", "Dir::State::Lists",
                "Dir::Cache"):
        value = re.search(r'^%s "([^"]*)";$' % key, conf, re.M).group(1)
        assert pathlib.Path(value).is_relative_to(apt), (key, value)
    assert (apt / "sources.list").read_text() == (
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://deb.example.org/debian-security/ %s main\n" % described()["BASE_SUITE"])
    assert (apt / "lists/Sources").exists()
    for outside in ("root", "elsewhere", "home", "bin"):
        assert files(top, outside) == (["bin/apt-get"] if outside == "bin" else []), outside
    # no temporary folder left, only the two files kept of the download
    assert sorted(p.name for p in tarball.parent.iterdir()) == sorted([tarball.name, dsc.name])


def test_a_tarball_that_differs_from_the_dsc_is_refused_and_removed(top):
    """(b) a SHA-256 that is not the .dsc's: the tarball goes, the run
    fails and says why; the next run fetches again."""
    tarball, dsc = names(top)
    proc = fetch(top, FAKE_APT_SOURCE="badsum")
    assert proc.returncode != 0
    assert "%s does not match the SHA-256 in %s" % (tarball.name, dsc.name) in proc.stderr
    assert not tarball.exists()
    assert not [p for p in tarball.parent.iterdir() if p.name.startswith(".fetch.")]
    calls(top)
    proc = fetch(top)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tarball.read_text() == "the tarball"
    assert len(calls(top)) == 3


def test_a_verified_tarball_is_not_fetched_again(top):
    """(c) the tarball there and matching its .dsc: nothing runs, nothing
    changes; a damaged one is fetched again."""
    tarball, dsc = names(top)
    assert fetch(top).returncode == 0
    calls(top)
    before = {p: p.stat().st_mtime_ns for p in (top / "build").rglob("*")}
    proc = fetch(top)
    assert proc.returncode == 0 and (proc.stdout, proc.stderr) == ("", "")
    assert calls(top) == []
    assert {p: p.stat().st_mtime_ns for p in (top / "build").rglob("*")} == before
    tarball.write_text("the tarball, damaged")
    proc = fetch(top)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tarball.read_text() == "the tarball" and len(calls(top)) == 3


def test_a_failed_download_leaves_no_partial_tarball(top):
    tarball, dsc = names(top)
    proc = fetch(top, FAKE_APT_SOURCE="fail")
    assert proc.returncode != 0
    assert "apt-get source %s=%s failed" % (described()["BASE_PACKAGE"],
                                             described()["BASE_VERSION"]) in proc.stderr
    assert sorted(tarball.parent.iterdir()) == []


def test_a_machine_without_the_suite_is_told_so(top):
    proc = fetch(top, FAKE_ARCHIVES="http://deb.example.org/debian/ bookworm")
    assert proc.returncode != 0
    assert "no %s archive" % described()["BASE_SUITE"] in proc.stderr
    assert [c["args"][0] for c in calls(top)] == ["indextargets"]
    assert not names(top)[0].exists()
