// SPDX-License-Identifier: GPL-2.0
/*
 * Micro-benchmarks of Yama's checks, run inside the QEMU bench kernel.
 *
 *   yama_bench [OPTIONS] stat NAME PATH N      stat() of PATH (through the
 *                                              symlinks it holds)
 *   yama_bench [OPTIONS] hardlink NAME DIR N   link()+unlink() of DIR/src
 *                                              to DIR/dst
 *   yama_bench [OPTIONS] ptrace NAME DEPTH N   open()+close() of
 *                                              /proc/PID/mem (attach mode)
 *                                              of a descendant DEPTH
 *                                              generations down
 * OPTIONS
 *   -V VARIANT=SYSCTL:VALUE[,SYSCTL:VALUE...]  a variant: the sysctls
 *                  (paths under /proc/sys) written before each of its
 *                  batches; up to 4 variants
 *   -b BATCHES     batches per variant (default 1)
 *   -u UID         follow/link with fsuid and fsgid UID (and so without
 *                  the file capabilities of root), as a user would
 *
 * Each batch is N timed operations; the variants alternate batch by batch
 * (A B C, then B C A, ...), so that drift of a shared host falls on all of
 * them alike. The sysctl files are opened once, as root, before the fsuid
 * changes. One line per batch: "R BATCH NAME VARIANT NS_PER_OP".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_VARIANTS 4
#define MAX_WRITES 4

struct variant {
	char name[32];
	int nwrites;
	int fd[MAX_WRITES];
	char value[MAX_WRITES][16];
};

static struct variant variants[MAX_VARIANTS];
static int nvariants;

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

static int usage(void)
{
	fprintf(stderr,
		"usage: yama_bench [-V VARIANT=SYSCTL:VALUE,...]... [-b BATCHES] [-u UID]\n"
		"                  stat NAME PATH N | hardlink NAME DIR N | ptrace NAME DEPTH N\n");
	return 2;
}

/* "yama=kernel/yama/protected_sticky_symlinks:1,fs/protected_symlinks:0" */
static void add_variant(char *spec)
{
	struct variant *v = &variants[nvariants];
	char *eq = strchr(spec, '='), *item, *save = NULL;

	if (nvariants == MAX_VARIANTS || !eq || eq == spec) {
		fprintf(stderr, "yama_bench: bad variant %s\n", spec);
		exit(2);
	}
	*eq = '\0';
	snprintf(v->name, sizeof(v->name), "%s", spec);
	for (item = strtok_r(eq + 1, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		char path[256], *colon = strrchr(item, ':');

		if (!colon || v->nwrites == MAX_WRITES) {
			fprintf(stderr, "yama_bench: bad sysctl %s\n", item);
			exit(2);
		}
		*colon = '\0';
		snprintf(path, sizeof(path), "/proc/sys/%s", item);
		v->fd[v->nwrites] = open(path, O_WRONLY);
		if (v->fd[v->nwrites] < 0)
			fail(path);
		snprintf(v->value[v->nwrites], sizeof(v->value[0]), "%s\n",
			 colon + 1);
		v->nwrites++;
	}
	nvariants++;
}

static void apply_variant(const struct variant *v)
{
	for (int i = 0; i < v->nwrites; i++) {
		size_t len = strlen(v->value[i]);

		if (pwrite(v->fd[i], v->value[i], len, 0) != (ssize_t)len)
			fail(v->name);
	}
}

static const char *path;
static char src[4096], dst[4096];

static void op_stat(void)
{
	struct stat st;

	if (stat(path, &st))
		fail(path);
}

static void op_hardlink(void)
{
	if (link(src, dst))
		fail("link");
	if (unlink(dst))
		fail("unlink");
}

static void op_open(void)
{
	int fd = open(path, O_RDWR);

	if (fd < 0)
		fail(path);
	close(fd);
}

/* A chain of DEPTH processes; the last one waits; returns the first. */
static pid_t spawn_chain(int depth, pid_t *leaf)
{
	int ready[2];
	pid_t pid;

	if (pipe(ready))
		fail("pipe");
	pid = fork();
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
	close(ready[1]);
	if (read(ready[0], leaf, sizeof(*leaf)) != sizeof(*leaf))
		fail("read leaf pid");
	close(ready[0]);
	return pid;
}

static double timed(void (*op)(void), long n)
{
	double t0;

	op();	/* untimed: caches hot, a failure shows before timing */
	t0 = now_ns();
	for (long i = 0; i < n; i++)
		op();
	return (now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
	static char procpath[64];
	void (*op)(void);
	long uid = -1, batches = 1, n;
	const char *name;
	pid_t top = 0;
	int c;

	while ((c = getopt(argc, argv, "+V:b:u:")) != -1) {
		switch (c) {
		case 'V':
			add_variant(optarg);
			break;
		case 'b':
			batches = atol(optarg);
			break;
		case 'u':
			uid = atol(optarg);
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 4 || batches < 1)
		return usage();
	name = argv[optind + 1];
	n = atol(argv[optind + 3]);
	if (n <= 0)
		return usage();
	if (!nvariants) {
		strcpy(variants[0].name, "asis");
		nvariants = 1;
	}
	if (!strcmp(argv[optind], "stat")) {
		path = argv[optind + 2];
		op = op_stat;
	} else if (!strcmp(argv[optind], "hardlink")) {
		snprintf(src, sizeof(src), "%s/src", argv[optind + 2]);
		snprintf(dst, sizeof(dst), "%s/dst", argv[optind + 2]);
		unlink(dst);
		op = op_hardlink;
	} else if (!strcmp(argv[optind], "ptrace")) {
		int depth = atoi(argv[optind + 2]);
		pid_t leaf;

		if (depth < 1)
			return usage();
		top = spawn_chain(depth, &leaf);
		snprintf(procpath, sizeof(procpath), "/proc/%d/mem", leaf);
		path = procpath;
		op = op_open;
	} else {
		return usage();
	}
	/* fsuid only: root's sysctl fds and capabilities stay usable. */
	if (uid >= 0) {
		setfsgid(uid);
		setfsuid(uid);
		if ((long)setfsuid(-1) != uid)
			fail("setfsuid");
	}
	for (long b = 0; b < batches; b++) {
		for (int k = 0; k < nvariants; k++) {
			const struct variant *v = &variants[(b + k) % nvariants];

			apply_variant(v);
			printf("R %ld %s %s %.1f\n", b + 1, name, v->name,
			       timed(op, n));
			fflush(stdout);
		}
	}
	if (top) {
		kill(top, SIGKILL);
		waitpid(top, NULL, 0);
	}
	return 0;
}
