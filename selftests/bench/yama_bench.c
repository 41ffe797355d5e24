// SPDX-License-Identifier: GPL-2.0
/*
 * Micro-benchmarks of Yama's checks, run inside the QEMU bench kernel.
 *
 *   yama_bench [-u UID] stat NAME PATH N
 *                   stat() of PATH (through whatever symlinks it holds)
 *   yama_bench [-u UID] hardlink DIR N
 *                   link()+unlink() of DIR/src to DIR/dst
 *   yama_bench ptrace DEPTH N
 *                   open()+close() of /proc/PID/mem (an attach-mode access)
 *                   of a descendant DEPTH generations down
 *
 * -u UID switches to UID (and GID UID) before the measured loop, so that a
 * symlink owned by UID is followed by its owner, or a file of another user
 * is linked. Each run prints one line "<name> <ns per operation>". The
 * caller sets the sysctls between runs, so one boot can alternate A B A B.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void fail(const char *what)
{
	fprintf(stderr, "yama_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void become(long uid)
{
	if (uid < 0)
		return;
	if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		fail("setresuid");
}

static double bench_stat(const char *path, long n)
{
	struct stat st;
	double t0;

	/* One untimed call: the dentries are hot, a failure shows early. */
	if (stat(path, &st))
		fail(path);
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		if (stat(path, &st))
			fail(path);
	return (now_ns() - t0) / n;
}

static double bench_hardlink(const char *dir, long n)
{
	char src[4096], dst[4096];
	double t0;

	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(dst, sizeof(dst), "%s/dst", dir);
	unlink(dst);
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		if (link(src, dst))
			fail("link");
		if (unlink(dst))
			fail("unlink");
	}
	return (now_ns() - t0) / n;
}

/* A chain of DEPTH processes; the last one waits; returns the first. */
static pid_t spawn_chain(int depth, int ready[2])
{
	pid_t pid = fork();

	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		close(ready[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int d = 1; d < depth; d++) {
			pid_t child = fork();

			if (child < 0)
				_exit(1);
			if (child) {
				pause();
				_exit(0);
			}
			prctl(PR_SET_PDEATHSIG, SIGKILL);
		}
		pid = getpid();
		if (write(ready[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(1);
		pause();
		_exit(0);
	}
	return pid;
}

static double bench_ptrace(int depth, long n)
{
	char path[64];
	int ready[2];
	pid_t top, leaf;
	double t0, r;
	int fd;

	if (pipe(ready))
		fail("pipe");
	top = spawn_chain(depth, ready);
	close(ready[1]);
	if (read(ready[0], &leaf, sizeof(leaf)) != sizeof(leaf))
		fail("read leaf pid");
	snprintf(path, sizeof(path), "/proc/%d/mem", leaf);
	fd = open(path, O_RDWR);
	if (fd < 0)
		fail(path);
	close(fd);
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		fd = open(path, O_RDWR);
		if (fd < 0)
			fail(path);
		close(fd);
	}
	r = (now_ns() - t0) / n;
	kill(top, SIGKILL);
	waitpid(top, NULL, 0);
	return r;
}

static long count(const char *s)
{
	long n = atol(s);

	if (n <= 0) {
		fprintf(stderr, "yama_bench: N must be positive\n");
		exit(2);
	}
	return n;
}

static int usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-u UID] stat NAME PATH N | [-u UID] hardlink DIR N | ptrace DEPTH N\n",
		prog);
	return 2;
}

int main(int argc, char **argv)
{
	const char *prog = argv[0];
	long uid = -1;

	if (argc > 2 && !strcmp(argv[1], "-u")) {
		uid = atol(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (argc == 5 && !strcmp(argv[1], "stat")) {
		long n = count(argv[4]);

		become(uid);
		printf("%s %.1f\n", argv[2], bench_stat(argv[3], n));
	} else if (argc == 4 && !strcmp(argv[1], "hardlink")) {
		long n = count(argv[3]);

		become(uid);
		printf("hardlink %.1f\n", bench_hardlink(argv[2], n));
	} else if (argc == 4 && !strcmp(argv[1], "ptrace")) {
		int depth = atoi(argv[2]);
		long n = count(argv[3]);

		if (depth < 1)
			return usage(prog);
		become(uid);
		printf("ptrace-depth%d %.1f\n", depth, bench_ptrace(depth, n));
	} else {
		return usage(prog);
	}
	return 0;
}
