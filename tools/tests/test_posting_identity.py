"""Tests of tools/identity, the one place that decides the sender of the
series and of its posting (review point 10), and of its use by lib.sh,
the Makefile and tools/posting."""
import os
import subprocess

import pytest

WS = os.environ["WS"]  # conftest.py
IDENTITY = os.path.join(WS, "tools", "identity")
PLACEHOLDER = "Yama Developers <yama-dev@example.org>"


def clean_env(tmp_path, name=None, addr=None, **extra):
    """An environment with no global or system git identity, and a
    workspace repo (IDENTITY_REPO) with user.name NAME and user.email ADDR
    when given."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    r = tmp_path / "repo"
    r.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    for key, value in (("user.name", name), ("user.email", addr)):
        if value:
            subprocess.run(["git", "-C", str(r), "config", key, value], check=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "SENDER"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(home / ".config"),
               IDENTITY_REPO=str(r))
    env.update(extra)
    return env


def ident(env, *args):
    p = subprocess.run([IDENTITY] + list(args), env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stdout, p.stderr


def shell_vars(out):
    v = {}
    for line in out.splitlines():
        k, _, val = line.partition("=")
        v[k] = subprocess.run(["bash", "-c", "printf %s " + val], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
    return v


def test_sender_wins_over_git_config(tmp_path):
    env = clean_env(tmp_path, "Git Person", "git@person.org",
                    SENDER="Jane Q. Doe <jane@kernel.org>")
    rc, out, err = ident(env, "--shell")
    v = shell_vars(out)
    assert rc == 0 and not err
    assert v == {"SENDER": "Jane Q. Doe <jane@kernel.org>", "SENDER_NAME": "Jane Q. Doe",
                 "SENDER_EMAIL": "jane@kernel.org", "SENDER_SOURCE": "env"}


def test_git_config_of_the_workspace_repo(tmp_path):
    env = clean_env(tmp_path, "Mickaël Salaün", "mic@digikod.net")
    rc, out, err = ident(env)
    assert rc == 0 and out.strip() == "Mickaël Salaün <mic@digikod.net>"
    assert shell_vars(ident(env, "--shell")[1])["SENDER_SOURCE"] == "git"
    rc, out, err = ident(env, "--warn")
    assert rc == 0 and out == "" and err == ""


def test_global_git_config_counts(tmp_path):
    env = clean_env(tmp_path)
    subprocess.run(["git", "config", "--global", "user.name", "Glo Bal"], env=env, check=True)
    subprocess.run(["git", "config", "--global", "user.email", "g@b.org"], env=env, check=True)
    assert ident(env)[1].strip() == "Glo Bal <g@b.org>"
    assert shell_vars(ident(env, "--shell")[1])["SENDER_SOURCE"] == "git"


@pytest.mark.parametrize("name,addr", [(None, None), ("Only Name", None),
                                       (None, "only@addr.example")])
def test_placeholder_only_without_identity_and_then_a_warning(tmp_path, name, addr):
    env = clean_env(tmp_path, name, addr)
    rc, out, err = ident(env, "--shell")
    v = shell_vars(out)
    assert rc == 0 and v["SENDER"] == PLACEHOLDER and v["SENDER_SOURCE"] == "placeholder"
    rc, out, err = ident(env, "--warn")
    assert rc == 0 and "WARNING" in err and "NOT sendable" in err and PLACEHOLDER in err
    assert "built-in placeholder" in err
    assert "Neither SENDER nor git config user.name/user.email gives a sender" in err


def test_the_placeholder_given_as_sender_is_still_the_placeholder(tmp_path):
    env = clean_env(tmp_path, SENDER=PLACEHOLDER)
    assert shell_vars(ident(env, "--shell")[1])["SENDER_SOURCE"] == "placeholder"
    assert "WARNING" in ident(env, "--warn")[2]


@pytest.mark.parametrize("bad", ["jane@kernel.example", "Jane", "Jane <jane>", "<j@k.example>",
                                 "Jane <a@b> <c@d>"])
def test_invalid_sender_is_an_error(tmp_path, bad):
    env = clean_env(tmp_path, SENDER=bad)
    rc, out, err = ident(env)
    assert rc == 2 and "not of the form" in err and out == ""


def test_lib_sh_takes_the_identity_from_tools_identity(tmp_path):
    env = clean_env(tmp_path, "Lib User", "lib@user.org")
    out = subprocess.run(["bash", "-c", '. "%s/tools/lib.sh"; echo "$SENDER_NAME|$SENDER_EMAIL|'
                          '$SENDER_SOURCE"' % WS], env=env, stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    assert out.strip() == "Lib User|lib@user.org|git"
    env["SENDER"] = "broken"
    p = subprocess.run(["bash", "-c", '. "%s/tools/lib.sh"; echo reached' % WS], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert p.returncode != 0 and "reached" not in p.stdout


def test_makefile_sets_no_default_sender(tmp_path):
    """make passes SENDER through when set and invents none when unset."""
    def sender(**extra):
        # not from the environment, nor from an enclosing make's command line
        env = {k: v for k, v in os.environ.items() if k not in (
            "SENDER", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL")}
        env.update(extra)
        return subprocess.run(
            ["make", "-s", "-C", WS, "--eval",
             "show-sender: ; @echo \"[$(SENDER)][$$SENDER]\"",
             "show-sender"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, check=True).stdout.strip()
    assert sender() == "[][]"
    assert sender(SENDER="A B <a@b.example>") == "[A B <a@b.example>][A B <a@b.example>]"


def test_one_home_for_the_placeholder():
    """Only tools/identity spells the placeholder as a sender; the scripts
    ask it (make-scratch-series writes it as the author of scratch patches,
    which the posting then rewrites to the sender)."""
    holders = []
    for d in ("tools", "tools/gates"):
        for fn in os.listdir(os.path.join(WS, d)):
            path = os.path.join(WS, d, fn)
            if os.path.isfile(path) and not fn.endswith(".md") and \
                    "yama-dev@example.org" in open(path, errors="replace").read():
                holders.append(os.path.join(d, fn))
    assert sorted(holders) == ["tools/gates/make-scratch-series", "tools/identity"]
    assert "yama-dev@example.org" not in open(os.path.join(WS, "Makefile")).read()


def posting(tmp_path, **extra):
    """tools/posting with no tree (it cannot post): (exit status, output)."""
    env = clean_env(tmp_path, BUILD=str(tmp_path / "build"), TREE=str(tmp_path / "no-tree"),
                    OUT=str(tmp_path / "out"), **extra)
    p = subprocess.run([os.path.join(WS, "tools", "posting")], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


def test_posting_warns_when_the_sender_is_the_placeholder(tmp_path):
    """make posting prints the warning (before and after the stage), even
    when the posting itself cannot be made."""
    rc, out = posting(tmp_path)
    assert rc != 0
    assert "WARNING: the posting is NOT sendable" in out, out


def test_posting_does_not_warn_with_an_identity(tmp_path):
    rc, out = posting(tmp_path, SENDER="Jane Doe <jane@kernel.org>")
    assert "WARNING" not in out, out


# ------------------------------------------- reserved and no-reply addresses
# Domains reserved by RFC 2606 / RFC 6761: no mail reaches them.
RESERVED = ["jane@kernel.example", "jane@example", "jane@foo.invalid", "jane@invalid",
            "jane@host.test", "jane@test", "jane@box.localhost", "jane@localhost",
            "jane@example.com", "jane@example.net", "jane@example.org",
            "jane@lists.example.com", "Jane@Kernel.EXAMPLE", "jane@kernel.example."]
NOREPLY = ["maintainers@users.noreply.a-seed-06ef1a17.example",
           "x@users.noreply.github.com", "noreply@kernel.org", "no-reply@kernel.org",
           "jane.NoReply@kernel.org", "jane@No-Reply.kernel.org", "jane@NOREPLY.dev"]
# near misses: real addresses, not placeholders
REAL = ["jane@kernel.org", "mic@digikod.net", "jane@examples.com", "jane@example.co.uk",
        "jane@contest.net", "jane@testing.org", "jane@localhost.dev", "jane@invalid.io",
        "reply@kernel.org", "jane@no.reply.org", "test@kernel.org", "example@kernel.org"]


@pytest.mark.parametrize("addr", RESERVED + NOREPLY)
def test_a_reserved_or_no_reply_sender_is_accepted_as_a_placeholder(tmp_path, addr):
    """SENDER with such an address is no error: it is used, as a placeholder."""
    env = clean_env(tmp_path, SENDER="Jane Doe <%s>" % addr)
    rc, out, err = ident(env, "--shell")
    v = shell_vars(out)
    assert rc == 0 and not err
    assert v == {"SENDER": "Jane Doe <%s>" % addr, "SENDER_NAME": "Jane Doe",
                 "SENDER_EMAIL": addr, "SENDER_SOURCE": "placeholder"}
    assert ident(env) == (0, "Jane Doe <%s>\n" % addr, "")
    rc, out, err = ident(env, "--warn")
    assert rc == 0 and out == "" and "WARNING: the posting is NOT sendable" in err


@pytest.mark.parametrize("addr", RESERVED + NOREPLY)
def test_a_reserved_or_no_reply_git_identity_is_a_placeholder(tmp_path, addr):
    env = clean_env(tmp_path, "Jane Doe", addr)
    v = shell_vars(ident(env, "--shell")[1])
    assert v["SENDER"] == "Jane Doe <%s>" % addr and v["SENDER_SOURCE"] == "placeholder"
    assert "NOT sendable" in ident(env, "--warn")[2]


@pytest.mark.parametrize("addr", REAL)
def test_a_real_address_is_not_a_placeholder(tmp_path, addr):
    for env, source in ((clean_env(tmp_path, SENDER="Jane Doe <%s>" % addr), "env"),
                        (clean_env(tmp_path, "Jane Doe", addr), "git")):
        v = shell_vars(ident(env, "--shell")[1])
        assert v["SENDER_EMAIL"] == addr and v["SENDER_SOURCE"] == source
        assert ident(env, "--warn") == (0, "", "")


def test_the_warning_names_a_no_reply_sender_and_why(tmp_path):
    sender = "Seed Maintainers <maintainers@users.noreply.a-seed-06ef1a17.example>"
    rc, out, err = ident(clean_env(tmp_path, SENDER=sender), "--warn")
    assert rc == 0 and out == ""
    lines = err.splitlines()
    assert all(l.startswith("WARNING: ") for l in lines), err
    assert lines[0] == "WARNING: the posting is NOT sendable as it stands: it is From: and"
    assert lines[1] == 'WARNING: Signed-off-by: "%s", a placeholder, not a sender:' % sender
    assert "WARNING:   - it is a no-reply address: replies and reviews cannot reach it" in lines
    assert "WARNING:   - its domain users.noreply.a-seed-06ef1a17.example is reserved " \
        "(RFC 2606, RFC 6761) and takes no mail" in lines
    assert 'WARNING: It comes from SENDER="%s".' % sender in lines
    assert 'make SENDER="Name <address>", then make again.' in err
    # not the built-in placeholder's text
    assert PLACEHOLDER not in err and "built-in" not in err and "Neither SENDER" not in err


def test_the_warning_names_a_reserved_git_identity_and_why(tmp_path):
    rc, out, err = ident(clean_env(tmp_path, "Jane Doe", "jane@box.localhost"), "--warn")
    assert rc == 0 and out == ""
    assert 'Signed-off-by: "Jane Doe <jane@box.localhost>", a placeholder' in err
    assert "its domain box.localhost is reserved" in err and "no-reply" not in err
    assert "It comes from git config user.name/user.email." in err


def test_lib_sh_and_posting_treat_a_no_reply_sender_as_a_placeholder(tmp_path):
    sender = "Jane Doe <jane@users.noreply.github.com>"
    env = clean_env(tmp_path, SENDER=sender)
    out = subprocess.run(["bash", "-c", '. "%s/tools/lib.sh"; echo "$SENDER|$SENDER_SOURCE"'
                          % WS], env=env, stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    assert out.strip() == sender + "|placeholder"
    rc, out = posting(tmp_path, SENDER=sender)
    assert "WARNING: the posting is NOT sendable" in out and sender in out, out
