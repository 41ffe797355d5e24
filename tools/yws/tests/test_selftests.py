"""make selftests' verdicts from fake KTAP and consoles: counts, skips with
their reason, the scenario's checks, splats, a cut-off run."""
from types import SimpleNamespace

from yws import selftests
from yws.qemu import Boot
from yws.ws import Workspace

KTAP = """TAP version 13
1..2
# selftests: yama: ptrace_test
# TAP version 13
# 1..3
# # Starting 3 tests from 1 test cases.
# #  RUN           ptrace.scope1.attach_child ...
# #            OK  ptrace.scope1.attach_child
# ok 1 ptrace.scope1.attach_child
# #  RUN           ptrace.scope3.no_attach ...
# #      SKIP      ptrace_scope is locked
# ok 2 ptrace.scope3.no_attach # SKIP ptrace_scope is locked
# #  RUN           ptrace.scope2.admin ...
# not ok 3 ptrace.scope2.admin
# # FAILED: 1 / 3 tests passed.
not ok 1 selftests: yama: ptrace_test # exit=1
# selftests: yama: sysctl_test
# 1..1
# ok 1 sysctl.default.default_is_kconfig
# # vfs_diff: seed=7 cases=10 agree=10 disagree=0 seconds=1.5
ok 2 selftests: yama: sysctl_test
# yama-selftests: end
"""
CONSOLE = "Yama: becoming mindful, starting with ptrace_scope=1\n"


def boot(ktap=KTAP, console=CONSOLE, problem=""):
    return Boot(console, ktap, 12.3, problem)


def test_ktap_counts_cases_and_skips_with_their_reason():
    r = selftests.judge("default", boot(), "", 2)
    assert (r["pass"], r["fail"], r["skip"]) == (2, 1, 1)
    skip = [c for c in r["cases"] if c["result"] == "skip"][0]
    assert skip == {"program": "ptrace_test", "name": "ptrace.scope3.no_attach",
                    "result": "skip", "reason": "ptrace_scope is locked"}
    assert r["problems"] == []
    assert r["counts"]["vfs_diff"] == {"seed": 7, "cases": 10, "agree": 10,
                                       "disagree": 0, "seconds": 1.5}


def test_a_cut_off_run_a_wrong_plan_and_a_qemu_problem_are_problems():
    cut = KTAP[:KTAP.index("ok 2 selftests")]
    r = selftests.judge("default", boot(cut, problem="QEMU killed"), "", 2)
    assert "QEMU killed" in r["problems"]
    assert "the run did not reach its end" in r["problems"]
    assert any("sysctl_test" in p and "no result" in p for p in r["problems"])
    assert any("expected" in p for p in selftests.judge("d", boot(), "", 3)["problems"])
    assert selftests.judge("d", boot(""), "", 2)["problems"][0].startswith("no KTAP plan")


def test_the_scenarios_checks_and_console_splats():
    checks = ("--must-pass ptrace.scope2.* --must-pass global.* "
              "--console-must Yama:.becoming --console-must-not landlock:")
    r = selftests.judge("default", boot(), checks, 2)
    assert r["problems"] == ["ptrace.scope2.admin: fail, must pass here ",
                             "no case matches global.*"]
    r = selftests.judge("minimal", boot(), "--must-skip ptrace.scope2.*", 2)
    assert r["problems"] == ["ptrace.scope2.admin: fail, must skip here "]
    r = selftests.judge("no-yama", boot(console="landlock: Up\nWARNING: at x.c:1\n"),
                        "--all-skip --console-must Yama:", 2)
    assert "WARNING: WARNING: at x.c:1" in r["problems"]
    assert "console lacks /Yama:/" in r["problems"]
    assert "console has /landlock:/: landlock:" not in r["problems"]
    assert sum("without Yama (must skip)" in p for p in r["problems"]) == 3


def test_publish_fills_the_scenarios_the_posting_reads():
    st = SimpleNamespace(passed=0, failed=0, skipped=0)
    ok = selftests.judge("default", boot(KTAP.replace("not ok", "ok")), "", 2)
    bad = selftests.judge("cmdline", boot(), "--must-pass nothing", 2)
    selftests.publish(st, {"default": ok, "cmdline": bad})
    assert (st.passed, st.failed, st.skipped) == (5, 2, 2)
    assert st.details["scenarios"]["default"]["pass"] == 3
    assert st.details["scenarios"]["cmdline"]["seconds"] == 12
    assert st.details["failed_cases"] == [
        {"name": "cmdline/ptrace_test/ptrace.scope2.admin", "reason": "fail"},
        {"name": "cmdline", "reason": "no case matches nothing"}]
    assert st.details["skipped_cases"][0]["reason"] == "ptrace_scope is locked"


def test_the_workspace_scenarios_parse(tmp_path):
    ws = Workspace()
    rows = selftests.scenarios(ws.root / "selftests/scenarios")
    names = [r[0] for r in rows]
    assert "default" in names and "vfs-diff" in names
    assert all(len(r) == 4 for r in rows)
    assert {r[3] for r in rows} == {"yama-links", "", "no-optional"}
    assert all((ws.root / "selftests/config/extra" / (f + ".config")).exists()
               for r in rows for f in r[3].split())
    assert selftests.scenarios(ws.root / "selftests/scenarios", ["no-yama"])[0][1] == "lsm=landlock"
