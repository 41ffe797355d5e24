"""Tests of make check-debug's workspace parts: the bad-input corpus and its
model of the kernel's sysctl parser, the debug scenario line, and that the
VM programs build. Nothing here runs them: they toggle sysctls and change
uids, so they only ever run inside the QEMU guest."""
import fnmatch
import glob
import os
import re
import subprocess
import sys

WS = os.environ["WS"]  # conftest.py
STRESS = os.path.join(WS, "selftests", "stress")
import gen_corpus  # noqa: E402
import series  # noqa: E402


def series_diffs():
    """[path, created, added text] of each file each patch of series/ changes."""
    sdir, diffs = os.path.join(WS, "series"), []
    for name in series.patch_names(sdir):
        cur = None
        for line in open(os.path.join(sdir, name), errors="replace"):
            if line.startswith("diff --git "):
                cur = [line.rstrip().split(" b/", 1)[1], False, ""]
                diffs.append(cur)
            elif cur and line.startswith("new file mode"):
                cur[1] = True
            elif cur and line.startswith("+") and not line.startswith("+++ "):
                cur[2] += line[1:]
    return diffs


def new_file_of_series(path):
    """The content of a file a patch of series/ creates (its + lines)."""
    for p, created, text in series_diffs():
        if p == path and created and text:
            return text
    raise AssertionError("no patch of series/ creates " + path)


FAKE_SYSCTL_TEST = r'''
TEST_F(sysctl, invalid_negative)
{
	const char *const inputs[] = { "-1", "-1\n", "-3", };

	check_invalid(_metadata, self->path, inputs, ARRAY_SIZE(inputs));
}

TEST_F(sysctl, invalid_junk)
{
	const char *const inputs[] = { "1x", "0x", "1.0", "1,", "0;1", "\t\n",
		"abc", "y", "on\n", "-", "#1", "x 0", "9\t0", "7 0 0",
		"2147483648", "99999999999999999999999999999999", "\x01", };

	check_invalid(_metadata, self->path, inputs, ARRAY_SIZE(inputs));
}
'''


def model(s, hi=1):
    return gen_corpus.model(s, 0, hi)


def test_model_invalid_inputs():
    for s in (b"\n", b" ", b"\t\n", b"1x", b"0x", b"-1",
              b"2", b"08", b"1\xa0", b"1\v", b"+1", b"- 1", b"-",
              b"4294967297", b"18446744073709551616", b"1\0", b"0" * 21,
              b" " * 5000, b" " * 4095 + b"1"):
        assert model(s) == gen_corpus.EINVAL, s


def test_model_takes_the_first_integer():
    """proc_dointvec_minmax: the first integer and the white space after
    it are used; the rest is left and only shortens the count."""
    assert model(b"1 0") == (1, 2)
    assert model(b"0\n1\n") == (0, 2)
    assert model(b"1 " + b"1" * 5000) == (1, 909)   # 4095 bytes looked at
    assert model(b"0 x") == (0, 2)


def test_model_accepted_spellings():
    assert model(b"1") == (1, 1)
    assert model(b"1\n") == (1, 2)
    assert model(b"0x1") == (1, 3)        # base 0: hex
    assert model(b"01") == (1, 2)         # base 0: octal
    assert model(b"-0") == (0, 2)
    assert model(b"\xa01") == (1, 2)      # 0xa0 is white space to the kernel
    assert model(b"0" * 19 + b"1") == (1, 20)
    # Only the first PAGE_SIZE - 1 bytes are parsed; the count is all.
    assert model(b"1" + b" " * 4094 + b"junk") == (1, 4099)
    assert model(b"") is None             # zero-length write: returns 0
    assert model(b"3", 3) == (3, 1)


def gen(tmp_path, name, src=FAKE_SYSCTL_TEST):
    """gen_corpus.py on a sysctl_test.c of src: the process, the corpus file."""
    (tmp_path / "sysctl_test.c").write_text(src)
    p = subprocess.run([sys.executable, os.path.join(STRESS, "gen_corpus.py"),
                        str(tmp_path / "sysctl_test.c"), str(tmp_path / name)],
                       capture_output=True, text=True)
    return p, tmp_path / name


def test_selftest_inputs_parsed(tmp_path):
    src = tmp_path / "sysctl_test.c"
    src.write_text(FAKE_SYSCTL_TEST)
    got = gen_corpus.selftest_inputs(str(src))
    assert [d for _, d in got][:3] == [b"-1", b"-1\n", b"-3"]
    assert ("invalid_junk", b"\x01") in got
    assert len(got) == 20


def test_corpus_deterministic_and_big_enough(tmp_path):
    (p, a), (q, b) = gen(tmp_path, "a.h"), gen(tmp_path, "b.h")
    assert p.returncode == q.returncode == 0, p.stderr + q.stderr
    corpus = a.read_text()
    assert corpus == b.read_text()
    assert "240 random invalid" in p.stdout
    assert corpus.count('"random"') >= 200 and corpus.count('"long:') >= 8


def test_generator_refuses_a_valid_selftest_input(tmp_path):
    p, _ = gen(tmp_path, "x.h", FAKE_SYSCTL_TEST.replace('"-3"', '"1"'))
    assert p.returncode != 0 and "model takes" in p.stderr


def test_real_selftest_inputs(tmp_path):
    """The corpus from the series' own sysctl_test.c (as check-debug makes it)."""
    p, _ = gen(tmp_path, "c.h", new_file_of_series("tools/testing/selftests/yama/sysctl_test.c"))
    assert p.returncode == 0 and "from the selftests" in p.stdout, p.stderr


def test_programs_build(tmp_path):
    p, _ = gen(tmp_path, "corpus.h")
    assert p.returncode == 0, p.stderr
    for prog in ("yama_stress", "yama_badinput"):
        p = subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Wextra",
                            "-Wno-unused-parameter", "-Werror",
                            "-I", str(tmp_path), "-o", str(tmp_path / prog),
                            os.path.join(STRESS, prog + ".c")],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def test_debug_scenario_line_is_understood_by_ktap_py(ktap):
    lines = [l for l in open(os.path.join(STRESS, "scenarios"))
             if l.strip() and not l.startswith("#")]
    assert len(lines) == 1
    name, cmdline, checks = lines[0].rstrip("\n").split("|")
    assert name == "debug" and "panic_on_warn=1" in cmdline
    # Empty logs fail the boot (1), but the options must parse (not 2).
    rc, out, _ = ktap("", "", *checks.split(), name=name)
    assert rc == 1 and "no case matches stress.*" in out, out


def series_cases():
    """The KUnit cases (suite.case) and kselftest cases (program/fixture.
    variant.test, as ktap.py names them) that the patches of series/ add."""
    files = {}
    for path, _created, text in series_diffs():
        files[path] = files.get(path, "") + text
    cases = set()
    for path, text in files.items():
        arrays = {m.group(1): re.findall(r"KUNIT_CASE\((\w+)\)", m.group(2))
                  for m in re.finditer(r"struct kunit_case (\w+)\[\] = \{(.*?)\};", text, re.S)}
        for m in re.finditer(r"struct kunit_suite \w+ = \{(.*?)\};", text, re.S):
            suite = re.search(r'\.name = "(\w+)"', m.group(1)).group(1)
            arr = re.search(r"\.test_cases = (\w+)", m.group(1)).group(1)
            cases |= {"%s.%s" % (suite, c) for c in arrays[arr]}
        if path.startswith("tools/testing/selftests/yama/") and path.endswith(".c"):
            prog = os.path.basename(path)[:-2]
            variants = {}
            for f, v in re.findall(r"FIXTURE_VARIANT_ADD\((\w+), (\w+)\)", text):
                variants.setdefault(f, []).append(v)
            for f, t in re.findall(r"^TEST_F\((\w+), (\w+)\)", text, re.M):
                for v in variants.get(f, [None]):
                    cases.add("%s/%s.%s%s" % (prog, f, v + "." if v else "", t))
            for t in re.findall(r"^TEST\((\w+)\)", text, re.M):
                cases.add("%s/global.%s" % (prog, t))
    return cases


def test_every_mutation_names_cases_the_series_has():
    """Each Must fail: glob of kunit/mutations and selftests/mutations
    matches a case the series adds (else make mutations could never call
    the mutation caught)."""
    cases = series_cases()
    assert "yama_sysctl.test_scope_write_three_is_final" in cases
    assert "sysctl_test/sysctl.ptrace_scope.invalid_out_of_range" in cases
    patches = glob.glob(os.path.join(WS, "kunit", "mutations", "*.patch")) + \
        glob.glob(os.path.join(WS, "selftests", "mutations", "*.patch"))
    assert patches
    for p in patches:
        first = open(p).readline()
        assert first.startswith("Must fail: "), p
        for g in first[len("Must fail: "):].split():
            assert any(fnmatch.fnmatchcase(c, g) for c in cases), (p, g)
