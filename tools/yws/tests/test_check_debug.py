"""check-debug: the proc_dointvec_minmax model behind the bad-input corpus,
the corpus header, and what counts as finding a planted bug."""
import json

import pytest

from yws import check_debug as debug, mutations, splats
from yws.check_debug import EINVAL, model
from yws.ws import StageError

SCOPE = (0, 3)


@pytest.mark.parametrize("data,want", [
    (b"1", (1, 1)),
    (b"1 \n junk", (1, 4)),          # one integer, trailing white space eaten
    (b"2\n", (2, 2)),
    (b"0x1", (1, 3)), (b"010", EINVAL), (b"-0", (0, 2)), (b"\xa01", (1, 2)),
    (b"\v\f\r 1", (1, 5)),
    (b"4", EINVAL), (b"-1", EINVAL), (b" ", EINVAL), (b"x", EINVAL),
    (b"1\0", EINVAL), (b"1x", EINVAL), (b"+1", EINVAL), (b"", None),
    (b"1" + b" " * 5000, (1, 5001)),  # the page's white space all consumed
    (b" " * 4095 + b"1", EINVAL),     # the number lies past the page
    (b"0" * 20 + b"1", EINVAL),       # 21 characters: too long
    (b"0" * 19 + b"1", (1, 20)),      # octal 1
])
def test_model_of_proc_dointvec_minmax(data, want):
    assert model(data, *SCOPE) == want


def test_model_int_bounds():
    wide = (-2**31, 2**31 - 1)
    assert model(b"-2147483648", *wide) == (-2**31, 11)
    assert model(b"2147483648", *wide) == EINVAL
    assert model(b"99999999999999999999", *wide) == EINVAL     # overflows u64


def sysctl_test(inputs):
    lits = ", ".join('"%s"' % i for i in inputs)
    return ("TEST_F(sysctl, invalid_values)\n{\n\tconst char *inputs[] = { %s };\n}\n"
            "TEST_F(sysctl, other)\n{\n\tconst char *inputs[] = { \"1\" };\n}\n" % lits)


INVALID = ["-1", "x", "4", " ", "1x", "\\x01", "\\t-", "0x", "x1", "--1", "+1", "1.0",
           "0xg", "\\0001", "abc", "1,2", "99999999999999999999", "-", "\\n", "1\\001"]


def test_corpus_entries_and_header():
    entries = debug.corpus(sysctl_test(INVALID), n_random=30)
    origins = [o for o, _ in entries]
    assert origins.count("selftest:invalid_values") == len(INVALID)   # "other" not read
    assert (origins.count("random"), origins.count("accepted")) == (30, debug.ACCEPTED)
    assert entries == debug.corpus(sysctl_test(INVALID), n_random=30)  # fixed seed
    assert all(e == EINVAL for o, d in entries if o == "random" for e in debug.expectations(d))
    h = debug.corpus_h(entries)
    assert h.count("\t{ ") == len(entries)
    # "4" is above ptrace_scope's maximum and written to it alone
    assert '"selftest:invalid_out_of_range(ptrace_scope)", corpus_%d, 1, ' \
        '{ CORPUS_EINVAL, CORPUS_NOWRITE, CORPUS_NOWRITE }' % origins.index(
            "selftest:invalid_out_of_range(ptrace_scope)") in h
    # a quirk the kernel takes: "0x1" -> 1 for all three, 3 bytes used
    i = entries.index(("quirk", b"0x1"))
    assert "corpus_%d, 3, { 1, 1, 1 }, { 3, 3, 3 } }" % i in h


def test_ptrace_scope_3_is_never_written():
    assert debug.c_outcome("quirk", "ptrace_scope", (3, 1)) == ("CORPUS_NOWRITE", "0")
    assert debug.c_outcome("quirk", "protected_sticky_symlinks", (1, 2)) == ("1", "2")


def test_corpus_refuses_a_selftest_input_the_model_takes():
    with pytest.raises(StageError, match="model takes"):
        debug.corpus(sysctl_test(INVALID + ["1"]))
    with pytest.raises(StageError, match="only 2"):
        debug.corpus(sysctl_test(["x", "y"]))


def rec(failed):
    return {"verdict": "fail", "passed": 9, "summary": "s",
            "details": {"failed_cases": failed}}


def test_planted_bug_found_only_by_what_the_run_found():
    found = lambda f: mutations.judge(debug.FOUND, rec(f))[0]
    assert found([{"name": "debug/yama_stress/stress.symlink", "reason": ""}]) == "caught"
    assert found([{"name": "kunit/yama_ptrace.test_x", "reason": "FAIL"}]) == "caught"
    assert found([{"name": "console", "reason": "KASAN: ..."}]) == "caught"
    assert found([{"name": "debug", "reason": "QEMU killed after 2400s"}]) == "off-target"
    assert found([]) == "error"


def test_kernel_reports_among_problems_are_named_console():
    st = type("St", (), {})()
    console = "[ 1.0] BUG: KASAN: slab-use-after-free in yama_ptracer_del+0x1/0x2\n"
    st.details = {"failed_cases": [{"name": "debug", "reason": splats.scan(console)[0]},
                                   {"name": "debug", "reason": "the run did not reach its end"}]}
    debug.name_reports(st, console)
    assert [f["name"] for f in st.details["failed_cases"]] == ["console", "debug"]


def test_kunit_at_boot_counts_failures_and_an_empty_run(tmp_path, monkeypatch):
    st = type("St", (), {"passed": 0, "failed": 0})()
    st.details = {"failed_cases": []}
    console = tmp_path / "console.log"
    console.write_text("boot\n")
    tree = {"name": "", "sub_groups": [{"name": "yama_ptrace", "test_cases": [
        {"name": "test_a", "status": "PASS"}, {"name": "test_b", "status": "FAILURE"}]}]}

    def fake_parse(cmd, **kw):                        # kunit.py parse --json=FILE
        js = next(c for c in cmd if str(c).startswith("--json="))[7:]
        open(js, "w").write(json.dumps(tree))
    ws = type("Ws", (), {"tree": tmp_path})()
    monkeypatch.setattr(debug, "run", fake_parse)
    debug.kunit_at_boot(ws, st, console, tmp_path)
    assert (st.passed, st.failed) == (1, 1)
    assert st.details["failed_cases"] == [{"name": "kunit/yama_ptrace.test_b", "reason": "FAILURE"}]
    tree = {"name": ""}
    debug.kunit_at_boot(ws, st, console, tmp_path)
    assert st.details["failed_cases"][-1]["name"] == "kunit"      # nothing ran: a failure
