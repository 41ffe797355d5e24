"""make check-debug: the series on a debug kernel in QEMU, and its corpus.

One kernel, the test kernel with the kasan and check-debug fragments and, after
the target's config, yama-links
(KASAN, KFENCE, lockdep, PROVE_RCU, DEBUG_OBJECTS, KUnit at boot), booted
once as selftests/stress/scenarios says (panic_on_warn=1): yama_stress,
yama_badinput (the bad-input corpus modelled here), the kselftests; Yama's
KUnit suites ran at boot and are parsed from the console. Any kernel report
fails. make mutations runs it with each bug of selftests/stress/mutations
planted in its own checkout: the run must FIND the bug (FOUND: a failed
case, KUnit failure or kernel report; not a build error or a timeout).
Nothing of this stage is in make check's build/results but its own result.
"""
import json
import random
import re

from . import kunit, qemu, selftests, splats
from .ws import PYTHON, Stage, StageError, run

PAGE_SIZE, TMPBUFLEN, INT_MAX, ULLONG_MAX = 4096, 22, 2**31 - 1, 2**64 - 1
# (name, min, max); ptrace_scope 3 is valid but final: never written here.
SYSCTLS = [("ptrace_scope", 0, 3), ("protected_sticky_symlinks", 0, 1),
           ("protected_nonaccess_hardlinks", 0, 1)]
EINVAL = "EINVAL"
SPACE = (9, 10, 11, 12, 13, 32, 160)    # lib/ctype.c's _S, 0xa0 included
SEED, RANDOM, ACCEPTED = 20101, 240, 24


def isxdigit(c, base=16):
    v = c - 48 if 48 <= c <= 57 else (c | 0x20) - 87 if 97 <= (c | 0x20) <= 102 else 99
    return v if v < base else None


def strtoul_lenient(tmp, q):
    """lib/kstrtox.c with base 0: (value, end), or None for -ERANGE."""
    base = 10
    if tmp[q] == 0x30:
        base = 8
        if (tmp[q + 1] | 0x20) == 0x78 and isxdigit(tmp[q + 2]) is not None:
            base, q = 16, q + 2
    res, overflow = 0, False
    while (val := isxdigit(tmp[q], base)) is not None:
        if res & (ULLONG_MAX << 60 & ULLONG_MAX) and res > (ULLONG_MAX - val) // base:
            overflow = True
        res, q = (res * base + val) & ULLONG_MAX, q + 1
    return None if overflow else (res, q)


def get_long(buf, p, size):
    """proc_get_long with white-space separators: (neg, value, length)."""
    tmp = bytes(buf[p:p + min(size, TMPBUFLEN - 1)]) + b"\0\0\0"
    neg = tmp[0] == 0x2d and size > 1
    if not 48 <= tmp[int(neg)] <= 57 or (r := strtoul_lenient(tmp, int(neg))) is None:
        return None
    val, q = r
    if q == TMPBUFLEN - 1 or q < size and tmp[q] not in (0x20, 0x09, 0x0a):
        return None
    return neg, val, q


def model(data, lo, hi):
    """write(fd, DATA) at offset 0 under proc_dointvec_minmax on one int:
    EINVAL, (value, count returned), or None for a zero-length write. One
    integer is taken, the white space after it consumed; anything after
    that is left unread and only shortens the count returned."""
    count = len(data)
    if not count:
        return None
    buf, left, p = bytes(data) + b"\0", min(count, PAGE_SIZE - 1), 0
    while left and buf[p] in SPACE:
        p, left = p + 1, left - 1
    if not left or (r := get_long(buf, p, left)) is None:
        return EINVAL
    neg, val, n = r
    p, left = p + n, left - n
    if val > INT_MAX + neg or not lo <= (-val if neg else val) <= hi:
        return EINVAL
    while left and buf[p] in SPACE:
        p, left = p + 1, left - 1
    return (-val if neg else val), count - left


def expectations(data):
    return [model(data, lo, hi) for _, lo, hi in SYSCTLS]


C_ESC = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8, "\\": 92,
         '"': 34, "'": 39, "?": 63}


def c_unescape(s):
    out, i = bytearray(), 0
    while i < len(s):
        if s[i] != "\\":
            out += s[i].encode()
            i += 1
        elif s[i + 1] in C_ESC:
            out.append(C_ESC[s[i + 1]])
            i += 2
        elif m := re.match(r"x([0-9a-fA-F]+)|([0-7]{1,3})", s[i + 1:]):
            out.append(int(m[1], 16) & 0xFF if m[1] else int(m[2], 8) & 0xFF)
            i += 1 + len(m[0])
        else:
            raise ValueError("unknown escape \\%s" % s[i + 1])
    return bytes(out)


def selftest_inputs(text):
    """(test, bytes) of the inputs[] tables of TEST_F(sysctl, invalid_*)."""
    found = []
    for m in re.finditer(r"TEST_F\(sysctl,\s*(invalid_\w+)\)\s*\{(.*?)\n\}", text, re.S):
        if t := re.search(r"inputs\[\]\s*=\s*\{(.*?)\};", m[2], re.S):
            found += [(m[1], c_unescape(lit))
                      for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', t[1])]
    return found


def random_string(rng):
    pools = [b"0123456789", b" \t\n\v\f\r\xa0", b"-+", b"xXabcdefABCDEF",
             b"\0", bytes(range(256)), b"0123456789 \n"]
    n = rng.choice([1, 1, 2, 3, 4, 5, 8, 12, 20, 21, 22, 23, 30, 64, 200])
    return bytes(rng.choice(rng.choice(pools)) for _ in range(n))


LONGS = [b"1" + b" " * 5000, b"1" + b" " * (PAGE_SIZE - 2) + b"junk", b"0" * 5000,
         b" " * 5000, b" " * (PAGE_SIZE - 1) + b"1", b"x" * 8192, b"1 " + b"1" * 5000,
         b"\0" * 4097, b"0" * (TMPBUFLEN - 2) + b"1", b"0" * (TMPBUFLEN - 3) + b"1",
         b"\n" * 20000]
# Spellings the kernel takes (base 0, "-0", white space of any kind).
QUIRKS = [b"0x1", b"0X1", b"-0", b"01", b"00", b"\xa01", b"\v\f\r 1", b"1\n\n",
          b"\t0\t", b"0x0", b"1 \n \t"]


def written(origin, sname):
    """An above-maximum entry is written to its own sysctl only."""
    return not origin.endswith(")") or origin.endswith(sname + ")")


def corpus(sysctl_test_text, seed=SEED, n_random=RANDOM):
    """[(origin, bytes)]: the kselftests' invalid inputs and above-maximum
    values, long inputs, quirks, then random invalid and accepted strings."""
    st = selftest_inputs(sysctl_test_text)
    if len(st) < 20:
        raise StageError("corpus: only %d invalid inputs in sysctl_test.c" % len(st))
    entries = [("selftest:" + name, data) for name, data in st]
    entries += [("selftest:invalid_out_of_range(%s)" % s, v) for s, _, hi in SYSCTLS
                for v in (b"%d" % (hi + 1), b"%d\n" % (hi + 1), b"%d" % (hi + 2))]
    entries += [("long:%d" % len(d), d) for d in LONGS] + [("quirk", d) for d in QUIRKS]
    for origin, data in entries:
        for (s, _, _), e in zip(SYSCTLS, expectations(data)):
            if origin.startswith("selftest:") and written(origin, s) and e != EINVAL:
                raise StageError("corpus: the model takes %r for %s: %r" % (data, s, e))
    rng, want = random.Random(seed), {"random": n_random, "accepted": ACCEPTED}
    got, seen = dict.fromkeys(want, 0), {d for _, d in entries}
    while got != want:
        data = random_string(rng)
        if data in seen:
            continue
        kind = "random" if all(e == EINVAL for e in expectations(data)) else "accepted"
        if got[kind] < want[kind]:
            got[kind] += 1
            seen.add(data)
            entries.append((kind, data))
    return entries


def c_outcome(origin, sname, e):
    """corpus.h's (value the sysctl then holds, count the write returns)."""
    if not written(origin, sname) or e is None or e != EINVAL and sname == "ptrace_scope" and e[0] == 3:
        return "CORPUS_NOWRITE", "0"        # not written, empty, or 3 (final)
    return ("CORPUS_EINVAL", "0") if e == EINVAL else (str(e[0]), str(e[1]))


def corpus_h(entries, seed=SEED, source="sysctl_test.c"):
    """The C header yama_badinput.c includes."""
    out = ["/* Generated by tools/yws/check_debug.py --seed %d from %s: do not edit. */"
           % (seed, source), "#define CORPUS_SEED %d" % seed,
           "#define CORPUS_EINVAL (-1)", "#define CORPUS_NOWRITE (-2)"]
    out += ["static const unsigned char corpus_%d[] = { %s };"
            % (i, ", ".join("0x%02x" % b for b in d) or "0") for i, (_, d) in enumerate(entries)]
    out.append("static const struct corpus_entry corpus[] = {")
    for i, (origin, data) in enumerate(entries):
        vals, rets = zip(*(c_outcome(origin, s, e) for (s, _, _), e
                           in zip(SYSCTLS, expectations(data))))
        out.append('\t{ "%s", corpus_%d, %d, { %s }, { %s } },'
                   % (origin, i, len(data), ", ".join(vals), ", ".join(rets)))
    return "\n".join(out + ["};", ""])


EXTRA, AFTER = ["kasan", "check-debug"], ["yama-links"]  # selftests/config/extra/, before and after the target's config
FOUND = ["*/*", "console", "kunit/*"]  # what a planted bug must make fail (stress/mutations)


def programs(ws, out):
    """yama_stress and yama_badinput, static, with the corpus of the tree."""
    test_c = ws.tree / "tools/testing/selftests/yama/sysctl_test.c"
    if not test_c.exists():
        raise StageError("no %s (selftests patch missing?)" % test_c)
    out.mkdir(parents=True, exist_ok=True)
    entries = corpus(test_c.read_text())
    (out / "corpus.h").write_text(corpus_h(entries, source=test_c.name))
    progs = [out / p for p in ("yama_stress", "yama_badinput")]
    for p in progs:
        run(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
             "-I", out, "-o", p, ws.root / "selftests/stress" / (p.name + ".c")], label="gcc " + p.name)
    return progs, len(entries)


def kunit_at_boot(ws, st, console, out):
    """Yama's suites ran at boot: kunit.py parse of the console into ST."""
    js = out / "kunit.json"
    js.unlink(missing_ok=True)
    if console.exists():
        run([PYTHON, ws.tree / "tools/testing/kunit/kunit.py", "parse", "--json=%s" % js, console],
            cwd=ws.tree, log=out / "kunit-parse.log", check=False, label="kunit.py parse")
    suites, failed = kunit.count(json.loads(js.read_text())) if js.exists() else ({}, [])
    passed = sum(s["pass"] for s in suites.values())
    failed = [{"name": "kunit/" + f["name"], "reason": f["reason"]} for f in failed]
    if not passed and not failed:
        failed = [{"name": "kunit", "reason": "no KUnit case passed at boot"}]
    st.passed += passed
    st.failed += len(failed)
    st.details["failed_cases"] += failed
    st.details["kunit"] = suites
    return "KUnit at boot %d passed, %d failed" % (passed, len(failed))


def name_reports(st, console):
    """A kernel report among the boot's problems is named "console"."""
    reports = set(splats.scan(console))
    for f in st.details["failed_cases"]:
        if f["reason"] in reports:
            f["name"] = "console"


def check_debug(ws, args):
    out = ws.dir("check-debug")
    with Stage(ws, "check-debug") as st:
        progs, n = programs(ws, out / "stress")
        rows = selftests.scenarios(ws.root / "selftests/stress/scenarios")
        kdir = qemu.kernel_dir(ws, EXTRA + AFTER)
        with qemu.locked(kdir):
            kernel = qemu.build_kernel(ws, ws.tree, kdir, EXTRA, AFTER)
            initrd, count = selftests.prepare(ws, ws.tree, kdir, out / "bin", progs)
            res = selftests.boots(kernel, initrd, rows, out, count, timeout=2400, smp=2)
        selftests.publish(st, res)
        console = out / rows[0][0] / "console.log"
        name_reports(st, console.read_text(errors="replace") if console.exists() else "")
        st.summary += "; " + kunit_at_boot(ws, st, console, out)
        counts = res[rows[0][0]]["counts"]
        st.details["corpus_entries"] = n
        for k in ("yama_stress", "yama_badinput"):
            st.progress("%s: %s" % (k, " ".join("%s=%s" % kv for kv in counts.get(k, {}).items())
                                    or "no figures"))
    return st.exit_code


COMMANDS = {"check-debug": (
    "the series on a debug kernel (KASAN, lockdep, ...): stress, bad input, kselftests, KUnit",
    None, check_debug)}
