#!/usr/bin/env python3
"""Generate the bad-input corpus for yama_badinput.c (a C header).

usage: gen_corpus.py SYSCTL_TEST_C OUT_H [--seed N] [--random N]

The corpus is:
  * "selftest": every invalid input of the kselftests' sysctl_test.c (the
    string literals of its TEST_F(sysctl, invalid_*) tables, read from the
    tree so the two never drift apart), plus their computed above-maximum
    values (max+1, max+1 with a newline, max+2) for each sysctl;
  * "long": inputs longer than a page (the kernel parses only the first
    PAGE_SIZE - 1 bytes);
  * "random": at least --random byte strings (default 240) from a fixed
    seed, drawn from digits, signs, hex letters, every kind of white space
    (including the kernel's 0xa0), NUL and arbitrary bytes, kept only when
    they are invalid for all three sysctls;
  * "accepted": a few random strings the kernel takes (positive controls,
    e.g. "0x1", "-0", " 01\\n"), with the value each sysctl must then hold.

The expected outcome of every entry comes from a model of the kernel's
parser (kernel/sysctl.c __do_proc_dointvec, proc_get_long and
strtoul_lenient with base 0, as proc_dointvec_minmax uses them): the
generator refuses to run when the model calls one of the selftests'
invalid inputs valid, and the VM asserts that the kernel agrees with the
model on every entry.
"""
import argparse
import random
import re
import sys

PAGE_SIZE = 4096
TMPBUFLEN = 22
INT_MAX = 2**31 - 1
ULLONG_MAX = 2**64 - 1
# (name, min, max); ptrace_scope 3 is valid but final: never written here.
SYSCTLS = [("ptrace_scope", 0, 3), ("protected_sticky_symlinks", 0, 1),
           ("protected_nonaccess_hardlinks", 0, 1)]
EINVAL = "EINVAL"


def k_isspace(c):
    # lib/ctype.c: 9..13, 32 and 160 (NBSP) carry _S.
    return c in (9, 10, 11, 12, 13, 32, 160)


def k_isdigit(c):
    return 48 <= c <= 57


def k_isxdigit(c):
    return k_isdigit(c) or 97 <= (c | 0x20) <= 102


def strtoul_lenient(tmp, q):
    """Return (value, end) or None for -ERANGE. tmp ends with NUL."""
    base = 10
    if tmp[q] == 0x30:
        if (tmp[q + 1] | 0x20) == 0x78 and k_isxdigit(tmp[q + 2]):
            base = 16
            q += 2
        else:
            base = 8
    res, overflow = 0, False
    while True:
        c = tmp[q]
        if k_isdigit(c):
            val = c - 48
        elif 97 <= (c | 0x20) <= 102:
            val = (c | 0x20) - 97 + 10
        else:
            break
        if val >= base:
            break
        if res & (ULLONG_MAX << 60 & ULLONG_MAX):
            if res > (ULLONG_MAX - val) // base:
                overflow = True
        res = (res * base + val) & ULLONG_MAX
        q += 1
    return None if overflow else (res, q)


def get_long(buf, p, size):
    """proc_get_long with the white-space separators: (neg, val, len)."""
    if not size:
        return None
    n = min(size, TMPBUFLEN - 1)
    tmp = bytes(buf[p:p + n]) + b"\0\0\0"
    neg = tmp[0] == 0x2d and size > 1
    q = 1 if neg else 0
    if not k_isdigit(tmp[q]):
        return None
    r = strtoul_lenient(tmp, q)
    if r is None:
        return None
    val, q = r
    if q == TMPBUFLEN - 1:
        return None
    if q < size and tmp[q] not in (0x20, 0x09, 0x0a):
        return None
    return neg, val, q


def model(data, lo, hi):
    """Outcome of write(fd, data, len) at offset 0 under
    proc_dointvec_minmax() on one int: EINVAL, or (value, returned count),
    or None for a zero-length write (returns 0, no change). The first
    integer is taken; the white space after it is consumed; anything after
    that is left unread and only shortens the count the write returns."""
    count = len(data)
    if count == 0:
        return None
    buf = bytes(data) + b"\0"
    left = min(count, PAGE_SIZE - 1)
    p = 0
    while left and k_isspace(buf[p]):
        p += 1
        left -= 1
    if not left:
        return EINVAL               # nothing but white space
    r = get_long(buf, p, left)
    if r is None:
        return EINVAL
    neg, val, n = r
    p += n
    left -= n
    if val > INT_MAX + neg:         # -(INT_MAX + 1) is an int too
        return EINVAL
    v = -val if neg else val
    if not lo <= v <= hi:
        return EINVAL
    while left and k_isspace(buf[p]):
        p += 1
        left -= 1
    return v, count - left


C_ESCAPES = {"n": 10, "t": 9, "r": 13, "v": 11, "f": 12, "a": 7, "b": 8,
             "\\": 92, '"': 34, "'": 39, "?": 63}


def c_unescape(s):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        i += 1
        e = s[i]
        if e in C_ESCAPES:
            out.append(C_ESCAPES[e])
            i += 1
        elif e == "x":
            m = re.match(r"[0-9a-fA-F]+", s[i + 1:])
            out.append(int(m.group(0), 16) & 0xFF)
            i += 1 + len(m.group(0))
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", s[i:])
            out.append(int(m.group(0), 8) & 0xFF)
            i += len(m.group(0))
        else:
            raise ValueError("unknown escape \\%s" % e)
    return bytes(out)


def selftest_inputs(path):
    """The string literals of the inputs[] tables of TEST_F(sysctl,
    invalid_*), in file order, with the name of their test."""
    src = open(path).read()
    found = []
    for m in re.finditer(r"TEST_F\(sysctl,\s*(invalid_\w+)\)\s*\{(.*?)\n\}",
                         src, re.S):
        name, body = m.group(1), m.group(2)
        t = re.search(r"inputs\[\]\s*=\s*\{(.*?)\};", body, re.S)
        if not t:
            continue
        for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', t.group(1)):
            found.append((name, c_unescape(lit)))
    return found


def random_string(rng):
    pools = [b"0123456789", b" \t\n\v\f\r\xa0", b"-+", b"xXabcdefABCDEF",
             b"\0", bytes(range(256)), b"0123456789 \n"]
    n = rng.choice([1, 1, 2, 3, 4, 5, 8, 12, 20, 21, 22, 23, 30, 64, 200])
    return bytes(rng.choice(rng.choice(pools)) for _ in range(n))


def expectations(data):
    """Per sysctl: EINVAL, or the value, or None (not to be written)."""
    return [model(data, lo, hi) for _, lo, hi in SYSCTLS]


def written(origin, sname):
    """An above-maximum entry is written to its own sysctl only."""
    return not origin.endswith(")") or origin.endswith(sname + ")")


def c_outcome(origin, sname, e):
    """corpus.h's (value the sysctl then holds, count the write returns)."""
    if not written(origin, sname):
        return "CORPUS_NOWRITE", "0"
    if e == EINVAL:
        return "CORPUS_EINVAL", "0"
    if e is None or (sname == "ptrace_scope" and e[0] == 3):
        return "CORPUS_NOWRITE", "0"    # 3 is final
    return str(e[0]), str(e[1])


def c_bytes(data):
    return ", ".join("0x%02x" % b for b in data) or "0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sysctl_test_c")
    ap.add_argument("out_h")
    ap.add_argument("--seed", type=int, default=20101)
    ap.add_argument("--random", type=int, default=240)
    args = ap.parse_args()

    st = selftest_inputs(args.sysctl_test_c)
    if len(st) < 20:
        sys.exit("gen_corpus: only %d invalid inputs found in %s" %
                 (len(st), args.sysctl_test_c))
    entries = [("selftest:" + name, data) for name, data in st]  # (origin, bytes)
    entries += [("selftest:invalid_out_of_range(%s)" % sname, v) for sname, _, hi in SYSCTLS
                for v in (b"%d" % (hi + 1), b"%d\n" % (hi + 1), b"%d" % (hi + 2))]
    longs = [
        b"1" + b" " * 5000,                     # accepted: value 1
        b"1" + b" " * (PAGE_SIZE - 2) + b"junk",  # junk after the page: ignored
        b"0" * 5000,
        b" " * 5000,
        b" " * (PAGE_SIZE - 1) + b"1",          # the number is past the page
        b"x" * 8192,
        b"1 " + b"1" * 5000,
        b"\0" * 4097,
        b"0" * (TMPBUFLEN - 2) + b"1",          # 21 digits: too long for tmp
        b"0" * (TMPBUFLEN - 3) + b"1",          # 20 digits (octal 1): accepted
        b"\n" * 20000,
    ]
    entries += [("long:%d" % len(data), data) for data in longs]
    # Accepted spellings (base 0 parsing, "-0", leading white space of any
    # kind, 0xa0 included): the kernel takes them, the value must follow.
    quirks = [b"0x1", b"0X1", b"-0", b"01", b"00", b"\xa01", b"\v\f\r 1",
              b"1\n\n", b"\t0\t", b"0x0", b"1 \n \t"]
    entries += [("quirk", data) for data in quirks]

    # Selftest inputs must be invalid for the model too.
    for origin, data in entries:
        if origin.startswith("selftest:"):
            for (sname, _, _), e in zip(SYSCTLS, expectations(data)):
                if written(origin, sname) and e != EINVAL:
                    sys.exit("gen_corpus: model takes %r for %s: %r" %
                             (data, sname, e))

    # "random": invalid for all three sysctls; "accepted": valid for one at least.
    rng = random.Random(args.seed)
    want = {"random": args.random, "accepted": 24}
    got = dict.fromkeys(want, 0)
    seen = set(d for _, d in entries)
    while any(got[k] < want[k] for k in want):
        data = random_string(rng)
        if data in seen:
            continue
        kind = ("random" if all(e == EINVAL for e in expectations(data))
                else "accepted")
        if got[kind] < want[kind]:
            got[kind] += 1
            seen.add(data)
            entries.append((kind, data))
        if len(seen) > 100000:
            sys.exit("gen_corpus: random search does not converge")

    with open(args.out_h, "w") as f:
        f.write("/* Generated by selftests/stress/gen_corpus.py --seed %d "
                "from %s: do not edit. */\n" % (args.seed, args.sysctl_test_c))
        f.write("#define CORPUS_SEED %d\n" % args.seed)
        f.write("#define CORPUS_EINVAL (-1)\n#define CORPUS_NOWRITE (-2)\n")
        for i, (_, data) in enumerate(entries):
            f.write("static const unsigned char corpus_%d[] = { %s };\n" %
                    (i, c_bytes(data)))
        f.write("static const struct corpus_entry corpus[] = {\n")
        for i, (origin, data) in enumerate(entries):
            vals, rets = zip(*(c_outcome(origin, sname, e) for (sname, _, _), e
                               in zip(SYSCTLS, expectations(data))))
            f.write('\t{ "%s", corpus_%d, %d, { %s }, { %s } },\n' %
                    (origin, i, len(data), ", ".join(vals), ", ".join(rets)))
        f.write("};\n")
    print("gen_corpus: %d entries (%d from the selftests, %d long, %d "
          "accepted spellings, %d random invalid, %d random accepted)" % (
              len(entries), sum(o.startswith("selftest:") for o, _ in entries),
              len(longs), len(quirks), got["random"], got["accepted"]))


if __name__ == "__main__":
    main()
