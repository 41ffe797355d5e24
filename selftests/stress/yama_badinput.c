// SPDX-License-Identifier: GPL-2.0
/*
 * yama_badinput: every entry of the generated corpus (corpus.h, made by
 * the model in tools/yws/debug.py from the tree's sysctl_test.c and a fixed seed) written to
 * each of Yama's three sysctls, from every start value, plus the partial
 * writes sysctl knows: at a non-zero offset, a second write(2) on the same
 * fd, zero-length writes, writev. Workspace-side, run as root in the test
 * VM (make check-debug); prints KTAP.
 *
 * What the kernel does (kernel.sysctl_writes_strict=1, the default; the
 * program checks it is 1 and asserts exactly this):
 *   - invalid input at offset 0: -1/EINVAL, value unchanged (the corpus
 *     says which inputs are invalid; a model of the kernel's parser in
 *     tools/yws/debug.py decides, e.g. "0x1", "-0", "\xa0" "1" are valid);
 *   - valid input at offset 0 (proc_dointvec_minmax parsing, as every
 *     integer sysctl): the first integer is taken, the white space after it
 *     is consumed, and the write returns the bytes used so far; anything
 *     after them ("1 1", "1 junk") is left unread and only shortens the
 *     count (the corpus gives the count for each entry);
 *   - input longer than a page: only the first PAGE_SIZE - 1 bytes are
 *     looked at, the same way;
 *   - a write of 0 bytes returns 0 and changes nothing;
 *   - any write at a non-zero file position (pwrite at offset > 0, lseek
 *     first, or the second write(2) after a successful one on the same fd)
 *     is ignored: it "succeeds", returning the full count, and changes
 *     nothing, whatever the bytes, invalid ones included: no EINVAL
 *     (__do_proc_dointvec skips the parsing and reports every byte as
 *     consumed);
 *   - a failed write does not move the file position, so the next
 *     write(2) on the same fd is parsed as a fresh one;
 *   - writev is one write: its pieces are parsed together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct corpus_entry {
	const char *origin;
	const unsigned char *bytes;
	unsigned int len;
	int expect[3];		/* value, CORPUS_EINVAL or CORPUS_NOWRITE */
	unsigned int ret[3];	/* write(2)'s return when accepted */
};
#include "corpus.h"
#include "sysctl_file.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const char *const names[3] = {
	"ptrace_scope", "protected_sticky_symlinks",
	"protected_nonaccess_hardlinks",
};
static const int maxval[3] = { 2, 1, 1 };	/* 3 is final: never written */

static unsigned long writes, einval_writes, accepted_writes, mismatches;
static int case_failed;

static void fail(const char *fmt, ...)
{
	va_list ap;

	case_failed = 1;
	if (++mismatches > 40)
		return;
	printf("# MISMATCH ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void path_of(int s, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/sys/kernel/yama/%s", names[s]);
}

static int current(int s)
{
	char path[96];

	path_of(s, path, sizeof(path));
	return read_int(path);
}

static int open_w(int s)
{
	char path[96];
	int fd;

	path_of(s, path, sizeof(path));
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		printf("Bail out! open %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static void set(int s, int v)
{
	char buf[8];
	int fd = open_w(s), len = snprintf(buf, sizeof(buf), "%d", v);

	if (write(fd, buf, len) != len || current(s) != v) {
		printf("Bail out! cannot set %s to %d: %s\n", names[s], v,
		       strerror(errno));
		exit(1);
	}
	close(fd);
}

/* One write(2) of a corpus entry on a fresh fd, judged. */
static void try_entry(int s, int start, const struct corpus_entry *e)
{
	int fd, err, now, want = e->expect[s];
	ssize_t rc;

	set(s, start);
	fd = open_w(s);
	rc = write(fd, e->bytes, e->len);
	err = errno;
	close(fd);
	now = current(s);
	writes++;
	if (want == CORPUS_EINVAL) {
		einval_writes++;
		if (rc != -1 || err != EINVAL)
			fail("%s: %s entry (%u bytes, first %#x) from %d: write returned %zd (%s), expected EINVAL",
			     names[s], e->origin, e->len, e->bytes[0], start, rc,
			     rc < 0 ? strerror(err) : "no error");
		if (now != start)
			fail("%s: %s entry (%u bytes, first %#x) changed the value from %d to %d",
			     names[s], e->origin, e->len, e->bytes[0], start, now);
	} else {
		accepted_writes++;
		if (rc != (ssize_t)e->ret[s] || now != want)
			fail("%s: %s entry (%u bytes, first %#x) from %d: write returned %zd (%s), value %d; expected %u and %d",
			     names[s], e->origin, e->len, e->bytes[0], start, rc,
			     rc < 0 ? strerror(err) : "-", now, e->ret[s], want);
	}
}

static void expect_write(int s, const char *what, ssize_t rc, ssize_t want,
			 int want_errno, int value)
{
	int err = errno, now = current(s);

	writes++;
	if (rc != want || (want < 0 && err != want_errno))
		fail("%s: %s returned %zd (%s), expected %zd%s%s", names[s], what,
		     rc, rc < 0 ? strerror(err) : "-", want,
		     want < 0 ? " " : "", want < 0 ? strerror(want_errno) : "");
	if (now != value)
		fail("%s: %s left the value %d, expected %d", names[s], what, now,
		     value);
}

static void partial_writes(int s, int start)
{
	static const long offsets[] = { 1, 2, 4095, 4096, 1L << 20 };
	int other = start ? 0 : 1, fd;
	char v[8], w[8], what[96];
	struct iovec iov[2];
	size_t i;

	snprintf(v, sizeof(v), "%d\n", other);
	snprintf(w, sizeof(w), "%d", start);
	for (i = 0; i < ARRAY_SIZE(offsets); i++) {
		set(s, start);
		fd = open_w(s);
		snprintf(what, sizeof(what), "pwrite of a valid value at %ld", offsets[i]);
		expect_write(s, what, pwrite(fd, v, strlen(v), offsets[i]), strlen(v), 0, start);
		snprintf(what, sizeof(what), "pwrite of \"abc\" at %ld", offsets[i]);
		expect_write(s, what, pwrite(fd, "abc", 3, offsets[i]), 3, 0, start);
		snprintf(what, sizeof(what), "pwrite of 0 bytes at %ld", offsets[i]);
		expect_write(s, what, pwrite(fd, v, 0, offsets[i]), 0, 0, start);
		close(fd);
	}

	/* A second write(2) after a successful one is at offset > 0. */
	set(s, start);
	fd = open_w(s);
	expect_write(s, "first write", write(fd, v, strlen(v)), strlen(v), 0, other);
	expect_write(s, "second write on the same fd", write(fd, w, strlen(w)), strlen(w), 0, other);
	expect_write(s, "third write (junk) on the same fd", write(fd, "x", 1), 1, 0, other);
	close(fd);

	/* A failed write leaves the position at 0: the next one counts. */
	set(s, start);
	fd = open_w(s);
	expect_write(s, "invalid write", write(fd, "1x", 2), -1, EINVAL, start);
	expect_write(s, "write after an invalid one", write(fd, v, strlen(v)),
		     strlen(v), 0, other);
	close(fd);

	/* lseek first. */
	set(s, start);
	fd = open_w(s);
	lseek(fd, 3, SEEK_SET);
	expect_write(s, "write after lseek(3)", write(fd, v, strlen(v)), strlen(v), 0, start);
	close(fd);

	/* Zero bytes at offset 0. */
	set(s, start);
	fd = open_w(s);
	expect_write(s, "write of 0 bytes", write(fd, v, 0), 0, 0, start);
	expect_write(s, "write after 0 bytes", write(fd, v, strlen(v)), strlen(v), 0, other);
	close(fd);

	/* writev: one write, parsed as a whole. */
	set(s, start);
	fd = open_w(s);
	iov[0].iov_base = v;
	iov[0].iov_len = 1;
	iov[1].iov_base = " 1";
	iov[1].iov_len = 2;
	/* "N 1": N and the blank are used, the second number is left. */
	expect_write(s, "writev of \"N\" \" 1\"", writev(fd, iov, 2), 2, 0, other);
	close(fd);
	set(s, start);
	fd = open_w(s);
	iov[1].iov_base = "\n";
	iov[1].iov_len = 1;
	expect_write(s, "writev of \"N\" \"\\n\"", writev(fd, iov, 2), 2, 0, other);
	close(fd);
}

int main(void)
{
	int initial[3], s, start, n = 0, failed = 0, strict;
	unsigned long corpus_einval = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	for (s = 0; s < 3; s++)
		initial[s] = current(s);
	if (initial[0] < 0 || initial[1] < 0 || initial[2] < 0) {
		printf("1..0 # SKIP Yama's sysctls are absent (Yama not in lsm=?)\n");
		return 4;
	}
	if (initial[0] == 3) {
		printf("1..0 # SKIP ptrace_scope is 3 (final)\n");
		return 4;
	}
	if (getuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 4;
	}
	{
		FILE *f = fopen("/proc/sys/kernel/sysctl_writes_strict", "r");

		strict = -9;
		if (f) {
			if (fscanf(f, "%d", &strict) != 1)
				strict = -9;
			fclose(f);
		}
	}
	printf("1..7\n");
	printf("# corpus: %zu entries (seed %d), kernel.sysctl_writes_strict=%d\n",
	       ARRAY_SIZE(corpus), CORPUS_SEED, strict);
	for (i = 0; i < ARRAY_SIZE(corpus); i++)
		corpus_einval += corpus[i].expect[1] == CORPUS_EINVAL;

	for (s = 0; s < 3; s++) {
		unsigned long w0 = writes, e0 = einval_writes;

		case_failed = 0;
		for (i = 0; i < ARRAY_SIZE(corpus); i++) {
			if (corpus[i].expect[s] == CORPUS_NOWRITE)
				continue;
			for (start = 0; start <= maxval[s]; start++)
				try_entry(s, start, &corpus[i]);
		}
		printf("# %s: %lu corpus writes, %lu of them invalid input\n",
		       names[s], writes - w0, einval_writes - e0);
		printf("%sok %d badinput.%s.corpus\n", case_failed ? "not " : "",
		       ++n, names[s]);
		failed += case_failed;
	}
	for (s = 0; s < 3; s++) {
		unsigned long w0 = writes;

		case_failed = 0;
		if (strict != 1) {
			printf("ok %d badinput.%s.partial_writes # SKIP sysctl_writes_strict is %d, not 1\n",
			       ++n, names[s], strict);
			continue;
		}
		for (start = 0; start <= 1; start++)
			partial_writes(s, start);
		printf("# %s: %lu partial/offset writes\n", names[s], writes - w0);
		printf("%sok %d badinput.%s.partial_writes\n",
		       case_failed ? "not " : "", ++n, names[s]);
		failed += case_failed;
	}
	case_failed = 0;
	for (s = 2; s >= 0; s--)
		set(s, initial[s]);
	for (s = 0; s < 3; s++)
		if (current(s) != initial[s])
			fail("%s not restored to %d", names[s], initial[s]);
	printf("%sok %d badinput.restored\n", case_failed ? "not " : "", ++n);
	failed += case_failed;
	/* invalid: writes of invalid input (EINVAL expected) */
	printf("# yama_badinput: writes=%lu invalid=%lu accepted=%lu mismatches=%lu distinct_invalid=%lu\n",
	       writes, einval_writes, accepted_writes, mismatches, corpus_einval);
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       n - failed, failed);
	return failed ? 1 : 0;
}
