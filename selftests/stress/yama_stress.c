// SPDX-License-Identifier: GPL-2.0
/*
 * yama_stress: a bounded stress run of Yama's three restrictions, for the
 * debug boot of make check-debug (KASAN, lockdep, PROVE_RCU, KFENCE, ...).
 * Workspace-side, not part of the series. Runs as root in the test VM,
 * stops by itself after YAMA_STRESS_SECONDS (default 40) and prints KTAP.
 *
 * Processes (not threads: each one owns its credentials), sharing one
 * anonymous shared mapping:
 *
 *   togglers (2)   take turns: mark the epoch odd, write a burst of random
 *                  values to the three sysctls, settle on final values,
 *                  read them back, publish them and mark the epoch even,
 *                  hold them for a random 5-40 ms "fixed" window, read
 *                  back again. ptrace_scope only takes 0..2 (3 is final).
 *   attachers (3)  uid 2001 without capabilities: attach-mode access
 *                  (open /proc/PID/mem, process_vm_readv, PTRACE_SEIZE +
 *                  INTERRUPT + DETACH) to their own children, to
 *                  grandchildren before, during and after the middle
 *                  process exits (reparenting to the subreaper or to
 *                  main), and to shared targets that are no relative.
 *   targets (mgr)  uid 2001, one manager that keeps 8 short-lived targets:
 *                  no exception, PR_SET_PTRACER set then cleared,
 *                  PR_SET_PTRACER_ANY, named one attacher, named the
 *                  attachers' ancestor (main), named a process that has
 *                  exited since; each retires after 10-200 ms and exits.
 *   storms (2)     fork/exit storms: chains whose middle exits at once,
 *                  leaving orphans that main (the subreaper) reaps.
 *   symlinkers (2) root processes switching fsuid among 0/1001/1002/1003,
 *                  following links (last and intermediate component) in
 *                  sticky/world-writable, plain and sticky-only
 *                  directories owned by 0 or 1001.
 *   linkers (2)    root processes switching fsuid/fsgid among 0/1001/
 *                  1002/1003, link(2)/unlink(2) of sources of every kind.
 *
 * A decision is judged only when the epoch was even and the same before
 * and after the operation (the sysctls held still) and, for shared
 * targets, when the target's slot generation did not move (it was alive,
 * its exception unchanged). Every judged decision is compared with the
 * rules of yama-spec.md; the result is the count of operations, judged
 * decisions and wrong decisions (which must be 0). fs.protected_symlinks
 * and fs.protected_hardlinks are 0 during the run, so Yama alone decides;
 * all sysctls are restored at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "sysctl_file.h"

#ifndef PR_SET_PTRACER
#define PR_SET_PTRACER 0x59616d61
#endif
#ifndef PR_SET_PTRACER_ANY
#define PR_SET_PTRACER_ANY ((unsigned long)-1)
#endif

#define SYS_SCOPE "/proc/sys/kernel/yama/ptrace_scope"
#define SYS_SYM "/proc/sys/kernel/yama/protected_sticky_symlinks"
#define SYS_HARD "/proc/sys/kernel/yama/protected_nonaccess_hardlinks"
#define SYS_VFS_SYM "/proc/sys/fs/protected_symlinks"
#define SYS_VFS_HARD "/proc/sys/fs/protected_hardlinks"
#define ROOT "/tmp/yama-stress"

#define ATTACHER_UID 2001
#define N_TOGGLERS 2
#define N_ATTACHERS 3
#define N_STORMS 2
#define N_SYMLINKERS 2
#define N_LINKERS 2
#define N_TARGETS 8
#define MAX_WORKERS 16

enum cat {
	C_TOGGLE, C_CHILD, C_REPARENT, C_SHARED, C_SYMLINK, C_HARDLINK,
	C_STORM, NCAT
};
static const char *const cat_name[NCAT] = {
	"sysctl_toggles", "ptrace_children", "ptrace_reparent",
	"ptrace_exceptions", "symlink_follow", "hardlink_create",
	"fork_exit_storm",
};

enum tkind {
	T_NONE, T_SETCLEAR, T_ANY, T_NAMED, T_NAMED_MAIN, T_NAMED_DEAD, NKIND
};
static const char *const kind_name[NKIND] = {
	"none", "set-then-cleared", "any", "named-attacher", "named-ancestor",
	"named-exited",
};

struct slot {
	unsigned long gen;	/* odd: being replaced */
	int pid;
	int kind;
	int named;		/* attacher index for T_NAMED */
};

struct shared {
	int stop;
	int toggle_lock;
	unsigned long seq;	/* even: scope/sym/hard hold */
	int scope, sym, hard;
	int attacher_pid[N_ATTACHERS];
	int main_pid;
	struct slot slot[N_TARGETS];
	unsigned long ops[NCAT], judged[NCAT], wrong[NCAT], errors[NCAT];
	unsigned long kinds_judged[NKIND];
	unsigned long exceptions_set, forks, sysctl_writes;
	char first_wrong[NCAT][200];
	char first_error[NCAT][200];
};

static struct shared *sh;
static unsigned int rng;

static unsigned int rnd(unsigned int n)
{
	rng = rng * 1103515245u + 12345u;
	return ((rng >> 8) & 0xffffff) % n;
}

static void add(unsigned long *p, unsigned long v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static int stopping(void)
{
	return __atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE);
}

/*
 * Count one wrong decision or one error of category c, print the first
 * three of each, keep the first message for the summary.
 */
__attribute__((format(printf, 5, 6)))
static void report(const char *what, enum cat c, unsigned long *count,
		   char *first, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (__atomic_fetch_add(count, 1, __ATOMIC_RELAXED) < 3)
		dprintf(1, "# %s %s: %s\n", what, cat_name[c], msg);
	/* First writer wins; a race here only loses a message. */
	if (!first[0])
		memcpy(first, msg, sizeof(msg));
}

/* c is evaluated more than once: a constant or a plain variable */
#define wrong(c, ...) \
	report("WRONG", (c), &sh->wrong[(c)], sh->first_wrong[(c)], __VA_ARGS__)
#define error(c, ...) \
	report("ERROR", (c), &sh->errors[(c)], sh->first_error[(c)], __VA_ARGS__)

static int write_int(const char *path, int v)
{
	char buf[16];
	int fd, n, len;

	len = snprintf(buf, sizeof(buf), "%d\n", v);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	n = n == len ? 0 : (n < 0 ? -errno : -EIO);
	close(fd);
	return n;
}

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* --- the epoch: values of the three sysctls held still ------------------ */

struct epoch {
	unsigned long seq;
	int scope, sym, hard;
};

/* Wait for an even epoch and take a snapshot of its values. */
static int epoch_begin(struct epoch *e)
{
	for (;;) {
		e->seq = __atomic_load_n(&sh->seq, __ATOMIC_SEQ_CST);
		if (!(e->seq & 1)) {
			e->scope = __atomic_load_n(&sh->scope, __ATOMIC_SEQ_CST);
			e->sym = __atomic_load_n(&sh->sym, __ATOMIC_SEQ_CST);
			e->hard = __atomic_load_n(&sh->hard, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&sh->seq, __ATOMIC_SEQ_CST) == e->seq)
				return 1;
		}
		if (stopping())
			return 0;
		sched_yield();
	}
}

/* Did the values hold during the operation? */
static int epoch_held(const struct epoch *e)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&sh->seq, __ATOMIC_SEQ_CST) == e->seq;
}

static void toggler(void)
{
	static const char *const path[3] = { SYS_SCOPE, SYS_SYM, SYS_HARD };
	static const int range[3] = { 3, 2, 2 };	/* scope: never 3 */

	while (!stopping()) {
		int v[3], i, n;

		while (__atomic_exchange_n(&sh->toggle_lock, 1, __ATOMIC_ACQUIRE))
			sched_yield();
		__atomic_fetch_add(&sh->seq, 1, __ATOMIC_SEQ_CST);	/* odd */
		for (n = rnd(8); n > 0; n--) {
			i = rnd(3);
			if (write_int(path[i], rnd(range[i])))
				error(C_TOGGLE, "burst write to %s failed", path[i]);
			add(&sh->sysctl_writes, 1);
		}
		for (i = 0; i < 3; i++) {
			v[i] = rnd(range[i]);
			if (write_int(path[i], v[i]))
				error(C_TOGGLE, "write %d to %s failed", v[i], path[i]);
			add(&sh->sysctl_writes, 1);
			if (read_int(path[i]) != v[i])
				wrong(C_TOGGLE, "%s reads %d after writing %d",
				      path[i], read_int(path[i]), v[i]);
		}
		__atomic_store_n(&sh->scope, v[0], __ATOMIC_SEQ_CST);
		__atomic_store_n(&sh->sym, v[1], __ATOMIC_SEQ_CST);
		__atomic_store_n(&sh->hard, v[2], __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&sh->seq, 1, __ATOMIC_SEQ_CST);	/* even */
		add(&sh->ops[C_TOGGLE], 1);
		msleep(5 + rnd(36));
		for (i = 0; i < 3; i++)
			if (read_int(path[i]) != v[i])
				wrong(C_TOGGLE, "%s changed to %d in a fixed window (%d)",
				      path[i], read_int(path[i]), v[i]);
		add(&sh->judged[C_TOGGLE], 1);
		__atomic_store_n(&sh->toggle_lock, 0, __ATOMIC_RELEASE);
		msleep(rnd(4));
	}
}

/* --- ptrace ----------------------------------------------------------------- */

static void become_attacher_uid(void)
{
	if (setgroups(0, NULL) || setresgid(ATTACHER_UID, ATTACHER_UID, ATTACHER_UID) ||
	    setresuid(ATTACHER_UID, ATTACHER_UID, ATTACHER_UID)) {
		dprintf(1, "# setresuid(%d): %s\n", ATTACHER_UID, strerror(errno));
		_exit(3);
	}
	/* The uid change made us non-dumpable: same-uid access needs it. */
	prctl(PR_SET_DUMPABLE, 1);
}

/* A child that waits to be killed (SIGKILL from its owner). */
static pid_t spawn_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	if (pid > 0)
		add(&sh->forks, 1);
	return pid;
}

enum how { H_MEM, H_VM, H_SEIZE, NHOW };

/*
 * One attach-mode access to @pid. Returns 1 allowed, 0 denied, -1 on an
 * errno that is neither (stored in *err).
 */
static int attach_access(pid_t pid, enum how how, int *err)
{
	char path[64], byte;
	struct iovec local = { &byte, 1 }, remote = { (void *)0x1000, 1 };
	int fd, status;

	*err = 0;
	switch (how) {
	case H_MEM:
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		fd = open(path, O_RDWR);
		if (fd >= 0) {
			close(fd);
			return 1;
		}
		*err = errno;
		return errno == EACCES ? 0 : -1;
	case H_VM:
		/* Allowed: the bad remote address gives EFAULT; denied: EPERM. */
		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0 ||
		    errno == EFAULT)
			return 1;
		*err = errno;
		return errno == EPERM ? 0 : -1;
	case H_SEIZE:
	default:
		if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
			*err = errno;
			return errno == EPERM ? 0 : -1;
		}
		if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) ||
		    waitpid(pid, &status, __WALL) != pid ||
		    ptrace(PTRACE_DETACH, pid, 0, 0)) {
			*err = errno ? errno : EIO;
			return -1;
		}
		return 1;
	}
}

static const char *how_name(enum how h)
{
	return h == H_MEM ? "open(/proc/PID/mem)" :
	       h == H_VM ? "process_vm_readv" : "PTRACE_SEIZE";
}

/* scope 0: DAC only; 1: relation needed; 2: CAP_SYS_PTRACE (we have none). */
static int expect_attach(int scope, int related)
{
	return scope == 0 || (scope == 1 && related);
}

static void judge_attach(enum cat c, const struct epoch *e, int got, int err,
			 int related, pid_t pid, enum how how, const char *what)
{
	int want = expect_attach(e->scope, related);

	add(&sh->judged[c], 1);
	if (got < 0)
		wrong(c, "%s of %s %d at scope %d: errno %d", how_name(how),
		      what, pid, e->scope, err);
	else if (got != want)
		wrong(c, "%s of %s %d at scope %d: %s, expected %s",
		      how_name(how), what, pid, e->scope,
		      got ? "allowed" : "denied", want ? "allowed" : "denied");
}

static void op_child(void)
{
	struct epoch e;
	enum how how = rnd(NHOW);
	int got, err;
	pid_t pid = spawn_sleeper();

	if (pid < 0) {
		error(C_CHILD, "fork: %s", strerror(errno));
		return;
	}
	if (epoch_begin(&e)) {
		got = attach_access(pid, how, &err);
		add(&sh->ops[C_CHILD], 1);
		if (epoch_held(&e))
			judge_attach(C_CHILD, &e, got, err, 1, pid, how, "own child");
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Grandchild G through a middle process M: a descendant while M lives;
 * when M exits, G goes to the nearest subreaper: ourselves when we are one
 * (still a descendant), otherwise main (not a descendant).
 */
static void op_reparent(int subreaper)
{
	int topipe[2], frompipe[2], got, err, status;
	struct epoch e;
	pid_t m, g = 0;
	enum how how;
	int i;

	if (pipe(topipe) || pipe(frompipe)) {
		error(C_REPARENT, "pipe: %s", strerror(errno));
		return;
	}
	m = fork();
	if (m == 0) {
		char c;
		pid_t gg;

		close(topipe[1]);
		close(frompipe[0]);
		gg = spawn_sleeper();
		if (write(frompipe[1], &gg, sizeof(gg)) != sizeof(gg))
			_exit(1);
		/* Exit when told (or when the attacher dies). */
		if (read(topipe[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(topipe[0]);
	close(frompipe[1]);
	if (m < 0 || read(frompipe[0], &g, sizeof(g)) != sizeof(g) || g <= 0) {
		error(C_REPARENT, "middle process: %s", strerror(errno));
		close(topipe[1]);
		close(frompipe[0]);
		if (m > 0)
			waitpid(m, NULL, 0);
		return;
	}
	add(&sh->forks, 1);
	close(frompipe[0]);

	/* Before: a descendant. */
	how = rnd(2);
	if (epoch_begin(&e)) {
		got = attach_access(g, how, &err);
		add(&sh->ops[C_REPARENT], 1);
		if (epoch_held(&e))
			judge_attach(C_REPARENT, &e, got, err, 1, g, how,
				     "grandchild");
	}
	/* During: the ancestry walk races with M's exit; scope 1 is unjudged. */
	close(topipe[1]);
	for (i = 0; i < 50; i++) {
		if (waitpid(m, &status, WNOHANG) == m) {
			m = 0;
			break;
		}
		how = rnd(2);
		if (!epoch_begin(&e))
			break;
		got = attach_access(g, how, &err);
		add(&sh->ops[C_REPARENT], 1);
		if (epoch_held(&e) && e.scope != 1)
			judge_attach(C_REPARENT, &e, got, err, 1, g, how,
				     "grandchild being reparented");
	}
	if (m > 0)
		waitpid(m, &status, 0);
	/* After: M is reaped, so G has its new parent. */
	how = rnd(2);
	if (epoch_begin(&e)) {
		got = attach_access(g, how, &err);
		add(&sh->ops[C_REPARENT], 1);
		if (epoch_held(&e))
			judge_attach(C_REPARENT, &e, got, err, subreaper, g, how,
				     subreaper ? "grandchild reparented to us" :
				     "grandchild reparented to main");
	}
	kill(g, SIGKILL);
	if (subreaper)
		waitpid(g, NULL, 0);
}

static void op_shared(int me)
{
	struct slot s;
	struct epoch e;
	enum how how = rnd(2);
	int got, err, i = rnd(N_TARGETS), related;
	unsigned long gen = __atomic_load_n(&sh->slot[i].gen, __ATOMIC_SEQ_CST);

	if (gen & 1)
		return;
	s = sh->slot[i];
	if (s.pid <= 0 ||
	    __atomic_load_n(&sh->slot[i].gen, __ATOMIC_SEQ_CST) != gen)
		return;
	if (!epoch_begin(&e))
		return;
	got = attach_access(s.pid, how, &err);
	add(&sh->ops[C_SHARED], 1);
	if (!epoch_held(&e) ||
	    __atomic_load_n(&sh->slot[i].gen, __ATOMIC_SEQ_CST) != gen)
		return;
	related = s.kind == T_ANY || s.kind == T_NAMED_MAIN ||
		  (s.kind == T_NAMED && s.named == me);
	add(&sh->kinds_judged[s.kind], 1);
	judge_attach(C_SHARED, &e, got, err, related, s.pid, how,
		     kind_name[s.kind]);
}

static void attacher(int me)
{
	become_attacher_uid();
	/* Attacher 0 is a subreaper: its orphaned grandchildren stay its own. */
	if (me == 0 && prctl(PR_SET_CHILD_SUBREAPER, 1))
		error(C_REPARENT, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	while (!stopping()) {
		switch (rnd(4)) {
		case 0:
			op_child();
			break;
		case 1:
			op_reparent(me == 0);
			break;
		default:
			op_shared(me);
			break;
		}
	}
}

/* The shared targets: uid 2001, children of the manager, no relatives. */
static pid_t spawn_target(int i, int kind, int named)
{
	int ready[2];
	pid_t pid, helper = 0;
	char c = 0;

	if (kind == T_NAMED_DEAD) {
		helper = spawn_sleeper();
		if (helper < 0)
			return -1;
	}
	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		long rc = 0;

		close(ready[0]);
		switch (kind) {
		case T_SETCLEAR:
			rc = prctl(PR_SET_PTRACER, sh->attacher_pid[named]);
			if (!rc)
				rc = prctl(PR_SET_PTRACER, 0);
			break;
		case T_ANY:
			rc = prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
			break;
		case T_NAMED:
			rc = prctl(PR_SET_PTRACER, sh->attacher_pid[named]);
			break;
		case T_NAMED_MAIN:
			rc = prctl(PR_SET_PTRACER, sh->main_pid);
			break;
		case T_NAMED_DEAD:
			rc = prctl(PR_SET_PTRACER, helper);
			break;
		}
		c = rc ? 'E' : 'R';
		if (write(ready[1], &c, 1) != 1 ||
		    (rc && write(ready[1], &errno, sizeof(errno)) < 0))
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1 || c != 'R') {
		int err = 0;

		if (c == 'E' && read(ready[0], &err, sizeof(err)) < 0)
			err = -1;
		/* At the stop, a named attacher may be gone already. */
		if (!stopping())
			error(C_SHARED, "target %s did not start: prctl: %s",
			      kind_name[kind], strerror(err));
		close(ready[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		if (helper > 0) {
			kill(helper, SIGKILL);
			waitpid(helper, NULL, 0);
		}
		return -1;
	}
	close(ready[0]);
	add(&sh->forks, 1);
	if (kind != T_NONE)
		add(&sh->exceptions_set, 1);
	if (helper > 0) {
		/* The named tracer exits before the target is published. */
		kill(helper, SIGKILL);
		waitpid(helper, NULL, 0);
	}
	sh->slot[i].pid = pid;
	sh->slot[i].kind = kind;
	sh->slot[i].named = named;
	__atomic_fetch_add(&sh->slot[i].gen, 1, __ATOMIC_SEQ_CST);	/* even */
	return pid;
}

static void target_manager(void)
{
	struct timespec now;
	long deadline[N_TARGETS];
	pid_t pid[N_TARGETS];
	int i;

	become_attacher_uid();
	for (i = 0; i < N_TARGETS; i++) {
		__atomic_store_n(&sh->slot[i].gen, 1, __ATOMIC_SEQ_CST);
		pid[i] = spawn_target(i, i % NKIND, rnd(N_ATTACHERS));
		deadline[i] = 0;
	}
	while (!stopping()) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		for (i = 0; i < N_TARGETS; i++) {
			long ms = now.tv_sec * 1000 + now.tv_nsec / 1000000;

			if (!deadline[i])
				deadline[i] = ms + 10 + rnd(190);
			if (ms < deadline[i])
				continue;
			/* Retire: unpublish, then exit (PR_SET_PTRACER dies with it). */
			__atomic_fetch_add(&sh->slot[i].gen, 1, __ATOMIC_SEQ_CST);
			if (pid[i] > 0) {
				kill(pid[i], SIGKILL);
				waitpid(pid[i], NULL, 0);
			}
			pid[i] = spawn_target(i, rnd(NKIND), rnd(N_ATTACHERS));
			deadline[i] = 0;
		}
		msleep(2);
	}
	for (i = 0; i < N_TARGETS; i++) {
		__atomic_fetch_add(&sh->slot[i].gen, 1, __ATOMIC_SEQ_CST);
		if (pid[i] > 0) {
			kill(pid[i], SIGKILL);
			waitpid(pid[i], NULL, 0);
		}
	}
}

/* Chains whose middle exits at once: orphans reparent to main. */
static void storm(void)
{
	while (!stopping()) {
		pid_t m = fork();

		if (m == 0) {
			int k;

			for (k = 0; k < 4; k++)
				if (fork() == 0) {
					msleep(rnd(5));
					_exit(0);
				}
			_exit(0);
		}
		if (m < 0) {
			error(C_STORM, "fork: %s", strerror(errno));
			msleep(10);
			continue;
		}
		waitpid(m, NULL, 0);
		add(&sh->forks, 5);
		add(&sh->ops[C_STORM], 1);
		add(&sh->judged[C_STORM], 1);
	}
}

/* --- links ------------------------------------------------------------------ */

struct ldir {
	const char *name;
	mode_t mode;
	uid_t owner;
};
static const struct ldir ldirs[] = {
	{ "sticky-ww-root", 01777, 0 },
	{ "sticky-ww-1001", 01777, 1001 },
	{ "plain-ww-root", 0777, 0 },
	{ "sticky-only-root", 01755, 0 },
};
static const uid_t link_owners[] = { 0, 1001, 1002 };
static const uid_t followers[] = { 0, 1001, 1002, 1003 };
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void set_fs_ids(uid_t id)
{
	/* setfsuid/setfsgid are per thread and always report the old value. */
	setfsgid(id);
	setfsuid(id);
	if ((uid_t)setfsuid(-1) != id || (gid_t)setfsgid(-1) != id)
		error(C_SYMLINK, "setfsuid(%u) did not hold", id);
}

static int symlink_expect(int enabled, uid_t follower, uid_t owner,
			  const struct ldir *d)
{
	int sticky_ww = (d->mode & 01002) == 01002;

	return !enabled || follower == owner || !sticky_ww || d->owner == owner;
}

static void symlinker(void)
{
	while (!stopping()) {
		const struct ldir *d = &ldirs[rnd(ARRAY_SIZE(ldirs))];
		uid_t owner = link_owners[rnd(ARRAY_SIZE(link_owners))];
		uid_t who = followers[rnd(ARRAY_SIZE(followers))];
		int inter = rnd(2), got, want, rc, fd;
		char path[128];
		struct epoch e;
		struct stat st;

		/* Last component (file link) or intermediate (dir link). */
		if (inter)
			snprintf(path, sizeof(path), ROOT "/%s/d%u/file", d->name, owner);
		else
			snprintf(path, sizeof(path), ROOT "/%s/f%u", d->name, owner);
		set_fs_ids(who);
		if (!epoch_begin(&e))
			break;
		if (rnd(2)) {
			rc = stat(path, &st);
		} else {
			fd = open(path, O_RDONLY);
			rc = fd < 0 ? -1 : 0;
			if (fd >= 0)
				close(fd);
		}
		got = rc == 0 ? 1 : (errno == EACCES ? 0 : -1);
		add(&sh->ops[C_SYMLINK], 1);
		if (!epoch_held(&e))
			continue;
		add(&sh->judged[C_SYMLINK], 1);
		want = symlink_expect(e.sym, who, owner, d);
		if (got < 0)
			wrong(C_SYMLINK, "%s as fsuid %u: errno %d", path, who, errno);
		else if (got != want)
			wrong(C_SYMLINK, "%s (link uid %u, dir %s) as fsuid %u with sysctl %d: %s",
			      path, owner, d->name, who, e.sym,
			      got ? "followed" : "refused");
	}
	set_fs_ids(0);
}

struct src {
	const char *name;
	mode_t mode;		/* type and bits */
	int safe;		/* regular, no setuid, no setgid+gx, o+rw */
};
static const struct src srcs[] = {
	{ "reg0666", S_IFREG | 0666, 1 },
	{ "reg0644", S_IFREG | 0644, 0 },
	{ "reg0662", S_IFREG | 0662, 0 },
	{ "reg0600", S_IFREG | 0600, 0 },
	{ "suid4666", S_IFREG | 04666, 0 },
	{ "sgid2676", S_IFREG | 02676, 0 },
	{ "sgid2666", S_IFREG | 02666, 1 },
	{ "fifo0666", S_IFIFO | 0666, 0 },
	{ "chr0666", S_IFCHR | 0666, 0 },
};
#define SRC_OWNER 1001
static const uid_t linkers[] = { 0, 1001, 1002, 1003 };

static void linker(int me)
{
	unsigned long n = 0;

	while (!stopping()) {
		const struct src *s = &srcs[rnd(ARRAY_SIZE(srcs))];
		uid_t who = linkers[rnd(ARRAY_SIZE(linkers))];
		char from[128], to[128];
		struct epoch e;
		int rc, got, want, err;

		snprintf(from, sizeof(from), ROOT "/src/%s", s->name);
		snprintf(to, sizeof(to), ROOT "/links/%d-%lu", me, n++);
		set_fs_ids(who);
		if (!epoch_begin(&e))
			break;
		rc = link(from, to);
		err = errno;
		add(&sh->ops[C_HARDLINK], 1);
		got = rc == 0 ? 1 : (err == EPERM ? 0 : -1);
		if (rc == 0 && unlink(to))
			error(C_HARDLINK, "unlink %s: %s", to, strerror(errno));
		if (!epoch_held(&e))
			continue;
		add(&sh->judged[C_HARDLINK], 1);
		want = !e.hard || who == SRC_OWNER || who == 0 || s->safe;
		if (got < 0)
			wrong(C_HARDLINK, "link %s as fsuid %u: errno %d", from, who, err);
		else if (got != want)
			wrong(C_HARDLINK, "link %s as fsuid %u with sysctl %d: %s",
			      from, who, e.hard, got ? "created" : "refused");
	}
	set_fs_ids(0);
}

/* --- setup, run, report ----------------------------------------------------- */

static int setup_files(void)
{
	char p[160];
	size_t i, j;

	if (mkdir(ROOT, 0755) && errno != EEXIST)
		return -1;
	mkdir(ROOT "/t", 0755);
	close(open(ROOT "/t/file", O_CREAT | O_WRONLY, 0644));
	for (i = 0; i < ARRAY_SIZE(ldirs); i++) {
		snprintf(p, sizeof(p), ROOT "/%s", ldirs[i].name);
		if ((mkdir(p, 0) && errno != EEXIST) || chmod(p, ldirs[i].mode) ||
		    chown(p, ldirs[i].owner, ldirs[i].owner))
			return -1;
		for (j = 0; j < ARRAY_SIZE(link_owners); j++) {
			uid_t o = link_owners[j];

			snprintf(p, sizeof(p), ROOT "/%s/f%u", ldirs[i].name, o);
			unlink(p);
			if (symlink(ROOT "/t/file", p) || lchown(p, o, o))
				return -1;
			snprintf(p, sizeof(p), ROOT "/%s/d%u", ldirs[i].name, o);
			unlink(p);
			if (symlink(ROOT "/t", p) || lchown(p, o, o))
				return -1;
		}
	}
	mkdir(ROOT "/src", 0755);
	mkdir(ROOT "/links", 0);
	if (chmod(ROOT "/links", 0777))
		return -1;
	for (i = 0; i < ARRAY_SIZE(srcs); i++) {
		snprintf(p, sizeof(p), ROOT "/src/%s", srcs[i].name);
		unlink(p);
		if (mknod(p, (srcs[i].mode & S_IFMT) | 0600,
			  S_ISCHR(srcs[i].mode) ? makedev(1, 3) : 0) ||
		    chown(p, SRC_OWNER, SRC_OWNER) ||
		    chmod(p, srcs[i].mode & 07777))
			return -1;
	}
	return 0;
}

static pid_t start(void (*fn)(int), int arg)
{
	pid_t pid = fork();

	if (pid == 0) {
		rng ^= (getpid() * 2654435761u) ^ (arg * 40503u);
		fn(arg);
		_exit(0);
	}
	return pid;
}

static void run_toggler(int i) { (void)i; toggler(); }
static void run_manager(int i) { (void)i; target_manager(); }
static void run_storm(int i) { (void)i; storm(); }
static void run_symlinker(int i) { (void)i; symlinker(); }

int main(void)
{
	int scope0, sym0, hard0, vsym0, vhard0, seconds, i, n = 0, failed = 0;
	int bad_exit = 0, restored;
	pid_t workers[MAX_WORKERS];
	char *env = getenv("YAMA_STRESS_SECONDS");
	time_t end;
	unsigned long total_ops = 0, total_judged = 0, total_wrong = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	seconds = env ? atoi(env) : 40;
	if (seconds <= 0)
		seconds = 40;
	printf("TAP version 13\n");
	scope0 = read_int(SYS_SCOPE);
	sym0 = read_int(SYS_SYM);
	hard0 = read_int(SYS_HARD);
	vsym0 = read_int(SYS_VFS_SYM);
	vhard0 = read_int(SYS_VFS_HARD);
	if (scope0 < 0 || sym0 < 0 || hard0 < 0) {
		printf("1..0 # SKIP Yama's sysctls are absent (Yama not in lsm=?)\n");
		return 4;
	}
	if (scope0 == 3) {
		printf("1..0 # SKIP ptrace_scope is 3 (final): nothing to toggle\n");
		return 4;
	}
	if (getuid() != 0) {
		printf("1..0 # SKIP needs root\n");
		return 4;
	}
	printf("1..%d\n", NCAT + 2);
	printf("# yama_stress: %d s, %d togglers, %d attachers, %d targets, %d storms, %d symlinkers, %d linkers\n",
	       seconds, N_TOGGLERS, N_ATTACHERS, N_TARGETS, N_STORMS,
	       N_SYMLINKERS, N_LINKERS);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || setup_files()) {
		printf("Bail out! setup: %s\n", strerror(errno));
		return 1;
	}
	sh->main_pid = getpid();
	sh->scope = scope0;
	sh->sym = sym0;
	sh->hard = hard0;
	rng = 0x59616d61;	/* fixed seed; workers mix in their pid */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		printf("Bail out! PR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
		return 1;
	}
	/* Yama alone decides about links during the run. */
	if (vsym0 >= 0)
		write_int(SYS_VFS_SYM, 0);
	if (vhard0 >= 0)
		write_int(SYS_VFS_HARD, 0);

	for (i = 0; i < N_ATTACHERS; i++)
		workers[n++] = sh->attacher_pid[i] = start(attacher, i);
	for (i = 0; i < N_TOGGLERS; i++)
		workers[n++] = start(run_toggler, i);
	workers[n++] = start(run_manager, 0);
	for (i = 0; i < N_STORMS; i++)
		workers[n++] = start(run_storm, i);
	for (i = 0; i < N_SYMLINKERS; i++)
		workers[n++] = start(run_symlinker, i);
	for (i = 0; i < N_LINKERS; i++)
		workers[n++] = start(linker, i);
	for (i = 0; i < n; i++)
		if (workers[i] < 0) {
			printf("Bail out! fork: %s\n", strerror(errno));
			sh->stop = 1;
			return 1;
		}

	/* Main: the subreaper. Reap orphans, note how workers end. */
	end = time(NULL) + seconds;
	for (;;) {
		int status, live = 0;
		pid_t pid;

		if (!sh->stop && time(NULL) >= end) {
			__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
			end = time(NULL) + 60;	/* grace for the workers */
		} else if (sh->stop && time(NULL) >= end) {
			printf("# workers still running 60 s after the stop: killed\n");
			for (i = 0; i < n; i++)
				if (workers[i] > 0)
					kill(workers[i], SIGKILL);
			bad_exit++;
		}
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (i = 0; i < n; i++) {
				if (workers[i] != pid)
					continue;
				workers[i] = 0;
				if (!WIFEXITED(status) || WEXITSTATUS(status)) {
					printf("# worker %d ended with status %#x\n",
					       i, status);
					bad_exit++;
				}
			}
		}
		for (i = 0; i < n; i++)
			live += workers[i] > 0;
		if (!live && pid < 0 && errno == ECHILD)
			break;
		msleep(20);
	}

	restored = !write_int(SYS_SCOPE, scope0) && !write_int(SYS_SYM, sym0) &&
		   !write_int(SYS_HARD, hard0);
	if (vsym0 >= 0)
		restored &= !write_int(SYS_VFS_SYM, vsym0);
	if (vhard0 >= 0)
		restored &= !write_int(SYS_VFS_HARD, vhard0);
	restored &= read_int(SYS_SCOPE) == scope0 && read_int(SYS_SYM) == sym0 &&
		    read_int(SYS_HARD) == hard0;

	printf("# forks %lu, PR_SET_PTRACER calls %lu, sysctl writes %lu\n",
	       sh->forks, sh->exceptions_set, sh->sysctl_writes);
	for (i = 0; i < NKIND; i++)
		printf("# shared targets judged, %s: %lu\n", kind_name[i],
		       sh->kinds_judged[i]);
	for (i = 0; i < NCAT; i++) {
		int ok = sh->wrong[i] == 0 && sh->errors[i] == 0 &&
			 sh->judged[i] > 0;

		printf("# stress.%s: operations=%lu judged=%lu wrong=%lu errors=%lu\n",
		       cat_name[i], sh->ops[i], sh->judged[i], sh->wrong[i],
		       sh->errors[i]);
		if (sh->first_wrong[i][0])
			printf("# first wrong: %s\n", sh->first_wrong[i]);
		if (sh->first_error[i][0])
			printf("# first error: %s\n", sh->first_error[i]);
		printf("%sok %d stress.%s\n", ok ? "" : "not ", i + 1, cat_name[i]);
		failed += !ok;
		total_ops += sh->ops[i];
		total_judged += sh->judged[i];
		total_wrong += sh->wrong[i];
	}
	printf("%sok %d stress.workers_ended_cleanly\n", bad_exit ? "not " : "",
	       NCAT + 1);
	printf("%sok %d stress.sysctls_restored\n", restored ? "" : "not ",
	       NCAT + 2);
	failed += !!bad_exit + !restored;
	printf("# yama_stress: operations=%lu judged=%lu wrong=%lu\n",
	       total_ops, total_judged, total_wrong);
	printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       NCAT + 2 - failed, failed);
	return failed ? 1 : 0;
}
