// SPDX-License-Identifier: GPL-2.0
/*
 * yama_vfs_diff: the VFS as a second oracle for Yama's link rules.
 *
 * Yama's protected_sticky_symlinks and protected_nonaccess_hardlinks are
 * specified to give the verdict of the VFS's may_follow_link() and
 * may_linkat() on every input those look at. This program generates cases
 * from a seed, runs each one twice in the same guest, once with only the
 * VFS rule on (fs.protected_*=1, Yama's sysctls 0) and once with only
 * Yama's rule on (fs.protected_*=0, Yama's sysctls 1), and compares:
 *
 *   trailing symlinks, hardlinks  the two verdicts (0 or errno) are equal;
 *   intermediate symlinks         the VFS does not look there, so Yama must
 *                                 refuse exactly when the VFS refuses the
 *                                 same symlink as a trailing component, and
 *                                 otherwise give the unrestricted result.
 *
 * Case i depends only on (seed, i): "--seed S --case I" replays one case.
 * Options come from argv or, in the test VM, from the kernel command line
 * (vfsdiff.seed=S|random, vfsdiff.cases=N, vfsdiff.case=I).
 *
 * Output is KTAP (one result per group of cases) plus one summary line,
 * "# vfs_diff: seed=... cases=... agree=... disagree=... refused=...",
 * which the workspace publishes in build/results/selftests.json.
 * Must run as root in the initial user namespace (it sets sysctls, makes
 * mounts and user namespaces); exits 4 (SKIP) with the reason otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

/*
 * struct mount_attr and the new mount API's flags are defined here, not
 * taken from <linux/mount.h>: with glibc 2.36 that header and
 * <sys/mount.h> cannot be included together.
 */

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KSFT_SKIP 4
#define DEFAULT_SEED 20101020ULL
#define DEFAULT_CASES 22000
/* Disagreements printed in full; more are counted. */
#define MAX_SHOWN 2000

#define BASE "/tmp/vfsdiff"
#define RAW BASE "/raw"
#define MAPPED BASE "/mapped"
/* The idmapped view: on-disk ids 0..1999 appear as 10000..11999. */
#define IDMAP "0 10000 2000\n"

/* The executors: the initial user namespace and two user namespaces. */
enum { EXEC_INIT, EXEC_NS1, EXEC_NS2, NR_EXEC };
static const char *const exec_name[NR_EXEC] = {
	"the initial ns", "a userns (uid/gid map 0 1000 1000)",
	"a userns (uid/gid map 0 11000 1000)",
};
static const char *const exec_map[NR_EXEC] = {
	NULL, "0 1000 1000\n", "0 11000 1000\n",
};
/*
 * fsuids and fsgids a caller takes, in its executor's namespace: six draws
 * each; in the user namespaces 0, 1 and 500 are host 1000, 1001 and 1500
 * (or 11000, 11001 and 11500), listed twice to fill the six.
 */
static const unsigned int exec_ids[NR_EXEC][6] = {
	{ 0, 1000, 1001, 11000, 11001, 30000 },
	{ 0, 1, 500, 0, 1, 500 },
	{ 0, 1, 500, 0, 1, 500 },
};

/* Initial-namespace ids that the idmapped mount maps (on-disk 0-1999). */
static const unsigned int idmapped_ids[] = { 10000, 11000, 11001, 11500 };

/*
 * Owners and groups of the hardlink sources, as stored on disk: the first
 * four are mapped on the idmapped mount (on-disk 0-1999), the last three
 * are not, and may_linkat() answers EOVERFLOW for those there before any
 * rule: drawn one time in four.
 */
static const unsigned int owners[] = { 0, 1000, 1001, 1500, 11000, 11001, 30000 };
#define NR_OWNERS ARRAY_SIZE(owners)
#define NR_MAPPED_OWNERS 4

/* Symlink fixtures: directories (owner x mode), each holding symlinks. */
static const unsigned int dir_owners[] = { 0, 1000, 1001, 11000, 30000 };
#define NR_DIR_OWNERS ARRAY_SIZE(dir_owners)
static const mode_t dir_modes[] = {
	01777,	/* sticky, world-writable */
	00777,	/* world-writable */
	01775,	/* sticky, group-writable */
	00775,	/* group-writable */
	01755,	/* sticky, neither */
	00755,	/* neither */
	01773,	/* sticky, world-writable, group read-only */
};
#define NR_DIR_MODES ARRAY_SIZE(dir_modes)
static const unsigned int link_owners[] = { 0, 1000, 1001, 11000, 11001, 30000 };
#define NR_LINK_OWNERS ARRAY_SIZE(link_owners)

/*
 * open() flags. The last two never follow a trailing symlink (O_EXCL
 * implies O_NOFOLLOW), so both rules trivially agree there: a trailing case
 * takes them one time in eight, an intermediate one (followed anyway) as
 * often as the others.
 */
static const struct {
	int flags;
	const char *name;
} open_modes[] = {
	{ O_RDONLY, "O_RDONLY" },
	{ O_WRONLY | O_CREAT, "O_WRONLY|O_CREAT" },
	{ O_RDWR | O_TRUNC, "O_RDWR|O_TRUNC" },
	{ O_PATH, "O_PATH" },
	{ O_RDONLY | O_NOFOLLOW, "O_RDONLY|O_NOFOLLOW" },
	{ O_WRONLY | O_CREAT | O_EXCL, "O_WRONLY|O_CREAT|O_EXCL" },
};
#define NR_OPEN_MODES ARRAY_SIZE(open_modes)
#define NR_FOLLOWING_OPEN_MODES 4

/*
 * Capability sets a caller holds (effective), within its namespace; CAP_ALL
 * is every capability the executor has (root as it is: no capability may
 * override the symlink rule).
 */
#define CAPBIT(c) (1ULL << (c))
#define CAP_ALL (~0ULL)
static const uint64_t cap_sets[] = {
	0,
	CAPBIT(CAP_FOWNER),
	CAPBIT(CAP_DAC_OVERRIDE),
	CAPBIT(CAP_DAC_READ_SEARCH),
	CAPBIT(CAP_FOWNER) | CAPBIT(CAP_DAC_OVERRIDE),
	CAP_ALL,
};
#define NR_CAP_SETS ARRAY_SIZE(cap_sets)

/* Hardlink sources: a pool made from the seed. */
#define NR_SOURCES 512
enum { SRC_REG, SRC_FIFO, SRC_CHR, SRC_DIR, SRC_SYMLINK, NR_SRC_TYPES };
static const char *const src_type_name[NR_SRC_TYPES] = {
	"regular", "fifo", "chardev", "directory", "symlink",
};
struct source {
	int type;
	unsigned int uid, gid;
	mode_t mode;		/* as requested */
	mode_t actual;		/* as made: an ACL sets the group bits */
	int acl;		/* 0: none, else the ACL variant */
	unsigned int acl_user, acl_group, acl_perm;
};
static struct source sources[NR_SOURCES];

enum { SYM_TRAILING, SYM_INTERMEDIATE, HARDLINK, NR_KINDS };
enum { VIEW_PLAIN, VIEW_IDMAPPED };
static const char *const view_name[] = { "plain", "idmapped" };

struct dcase {
	int kind, view, exec;
	int set_euid;		/* the euid is the fsuid too (else root) */
	unsigned int fsuid, fsgid;
	int sgid;		/* a supplementary group, or -1 */
	uint64_t caps;
	int dir, link_owner, open_mode;	/* symlinks */
	int src;			/* hardlinks */
};

/* What an executor is asked to do. */
struct op {
	int what;		/* OP_OPEN, OP_LINK */
	int flags;
	int set_euid;
	unsigned int fsuid, fsgid;
	int sgid;
	uint64_t caps;
	char path[160], path2[160];
};
enum { OP_OPEN, OP_LINK, OP_QUIT, OP_START };
#define EXEC_BROKEN 100000

static struct {
	int to, from;
	pid_t pid;
} executors[NR_EXEC];

static uint64_t seed;

/* --- cases from (seed, index) ------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned int pick(uint64_t *s, unsigned int n)
{
	return splitmix(s) % n;
}

static void make_case(uint64_t index, struct dcase *c)
{
	uint64_t s = seed ^ (index * 0xd1b54a32d192ed03ULL);

	splitmix(&s);
	memset(c, 0, sizeof(*c));
	c->kind = pick(&s, NR_KINDS);
	c->view = pick(&s, 2);
	c->exec = pick(&s, 4) < 2 ? EXEC_INIT : 1 + pick(&s, 2);
	/*
	 * Callers from the first user namespace (host 1000-1999) cannot
	 * create anything on the idmapped mount (10000-11999): their links
	 * there would all fail with EOVERFLOW, so they link on the plain one.
	 */
	if (c->kind == HARDLINK && c->exec == EXEC_NS1)
		c->view = VIEW_PLAIN;
	c->set_euid = pick(&s, 4) == 0;
	c->fsuid = exec_ids[c->exec][pick(&s, 6)];
	c->fsgid = exec_ids[c->exec][pick(&s, 6)];
	/*
	 * Only 11000-11999 of the initial namespace's ids can create on the
	 * idmapped mount: its hardlink callers mostly take those.
	 */
	if (c->kind == HARDLINK && c->view == VIEW_IDMAPPED &&
	    c->exec == EXEC_INIT && pick(&s, 4)) {
		c->fsuid = idmapped_ids[pick(&s, ARRAY_SIZE(idmapped_ids))];
		c->fsgid = idmapped_ids[pick(&s, ARRAY_SIZE(idmapped_ids))];
	}
	c->sgid = pick(&s, 3) ? -1 : (int)exec_ids[c->exec][pick(&s, 6)];
	c->caps = cap_sets[pick(&s, NR_CAP_SETS)];
	c->dir = pick(&s, NR_DIR_OWNERS * NR_DIR_MODES);
	c->link_owner = pick(&s, NR_LINK_OWNERS);
	if (c->kind == SYM_TRAILING && pick(&s, 8))
		c->open_mode = pick(&s, NR_FOLLOWING_OPEN_MODES);
	else
		c->open_mode = pick(&s, NR_OPEN_MODES);
	c->src = pick(&s, NR_SOURCES);
}

static void make_sources(void)
{
	uint64_t s = seed ^ 0x5eed5eed5eedULL;
	int i;

	for (i = 0; i < NR_SOURCES; i++) {
		struct source *src = &sources[i];

		src->type = pick(&s, 8);
		if (src->type >= NR_SRC_TYPES)
			src->type = SRC_REG;	/* mostly regular files */
		src->uid = owners[pick(&s, pick(&s, 4) ? NR_MAPPED_OWNERS :
					    NR_OWNERS)];
		src->gid = owners[pick(&s, pick(&s, 4) ? NR_MAPPED_OWNERS :
					    NR_OWNERS)];
		src->mode = pick(&s, 010000);
		if (pick(&s, 4) == 0) {
			/* setuid or setgid+group execute, often */
			src->mode |= pick(&s, 2) ? 04000 : 02010;
		}
		src->acl = src->type == SRC_SYMLINK ? 0 : pick(&s, 4) == 0;
		src->acl_user = owners[pick(&s, NR_OWNERS)];
		src->acl_group = owners[pick(&s, NR_OWNERS)];
		src->acl_perm = pick(&s, 8);
	}
}

static const char *errname(int err)
{
	static char buf[32];

	switch (err) {
	case 0: return "success";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case ELOOP: return "ELOOP";
	case EOVERFLOW: return "EOVERFLOW";
	case EISDIR: return "EISDIR";
	case ENOTDIR: return "ENOTDIR";
	case EXDEV: return "EXDEV";
	}
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

static void describe(uint64_t index, const struct dcase *c, char *buf,
		     size_t size)
{
	int n;

	n = snprintf(buf, size,
		     "seed %" PRIu64 " case %" PRIu64 ": %s, %s mount, caller in %s (ids in it) %s fsuid=%u fsgid=%u groups=",
		     seed, index, c->kind == HARDLINK ? "hardlink" :
		     c->kind == SYM_TRAILING ? "trailing symlink" :
		     "intermediate symlink", view_name[c->view],
		     exec_name[c->exec], c->set_euid ? "euid=fsuid" : "euid=0",
		     c->fsuid, c->fsgid);
	n += snprintf(buf + n, size - n, c->sgid < 0 ? "none" : "%d", c->sgid);
	n += snprintf(buf + n, size - n, " caps=%s%s%s%s%s",
		      c->caps ? "" : "none", c->caps == CAP_ALL ? "all" :
		      "", c->caps == CAP_ALL ? "" :
		      c->caps & CAPBIT(CAP_FOWNER) ? "+FOWNER" : "",
		      c->caps == CAP_ALL ? "" :
		      c->caps & CAPBIT(CAP_DAC_OVERRIDE) ? "+DAC_OVERRIDE" : "",
		      c->caps == CAP_ALL ? "" :
		      c->caps & CAPBIT(CAP_DAC_READ_SEARCH) ? "+DAC_READ_SEARCH" : "");
	if (c->kind == HARDLINK) {
		const struct source *src = &sources[c->src];

		n += snprintf(buf + n, size - n,
			      "; source #%d: %s, on disk uid=%u gid=%u mode=%04o",
			      c->src, src_type_name[src->type], src->uid,
			      src->gid, src->actual & 07777);
		if (src->acl)
			snprintf(buf + n, size - n,
				 " acl=user:%u:%o,group:%u:%o,mask:%o",
				 src->acl_user, src->acl_perm, src->acl_group,
				 src->acl_perm, src->acl_perm | 4);
	} else {
		snprintf(buf + n, size - n,
			 "; on disk: directory uid=%u mode=%04o, symlink uid=%u; %s",
			 dir_owners[c->dir / NR_DIR_MODES],
			 dir_modes[c->dir % NR_DIR_MODES],
			 link_owners[c->link_owner],
			 open_modes[c->open_mode].name);
	}
}

/* --- executing one operation as a given caller ---------------------------- */

static int set_caps(uint64_t effective, uint64_t permitted)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {
		{ .effective = (uint32_t)effective,
		  .permitted = (uint32_t)permitted },
		{ .effective = (uint32_t)(effective >> 32),
		  .permitted = (uint32_t)(permitted >> 32) },
	};

	return syscall(SYS_capset, &hdr, data);
}

static uint64_t permitted_caps(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return data[0].permitted | ((uint64_t)data[1].permitted << 32);
}

/* The operation's result, 0 or an errno; EXEC_BROKEN if the caller could
 * not be set up or restored.
 */
static int perform(const struct op *op, uint64_t all_caps)
{
	gid_t group = op->sgid;
	int ret = 0, fd;

	if (setgroups(op->sgid < 0 ? 0 : 1, &group))
		return EXEC_BROKEN;
	setfsgid(op->fsgid);
	/* A new euid sets the fsuid too, and empties the effective set. */
	if (op->set_euid && setresuid(-1, op->fsuid, -1))
		return EXEC_BROKEN;
	setfsuid(op->fsuid);
	if ((unsigned int)setfsuid(-1) != op->fsuid ||
	    (unsigned int)setfsgid(-1) != op->fsgid ||
	    set_caps(op->caps & all_caps, all_caps))
		return EXEC_BROKEN;
	if (op->what == OP_OPEN) {
		fd = open(op->path, op->flags, 0644);
		if (fd < 0)
			ret = errno;
		else
			close(fd);
	} else {
		if (linkat(AT_FDCWD, op->path, AT_FDCWD, op->path2, 0))
			ret = errno;
	}
	if (set_caps(all_caps, all_caps))
		return EXEC_BROKEN;
	if (op->set_euid && setresuid(-1, 0, -1))
		return EXEC_BROKEN;
	setfsuid(0);
	setfsgid(0);
	if (setfsuid(-1) != 0 || setfsgid(-1) != 0 || setgroups(0, NULL))
		return EXEC_BROKEN;
	return ret;
}

static int write_file(const char *path, const char *text)
{
	ssize_t len = strlen(text);
	int fd, ok;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, text, len) == len;
	close(fd);
	return ok ? 0 : -1;
}

/*
 * An executor in a user namespace: once its maps are written (OP_START),
 * it becomes the namespace's root, then performs ops and answers with
 * their results.
 */
static void executor_loop(int in, int out)
{
	struct op op;
	uint64_t all;
	int ret = 0;

	if (read(in, &op, sizeof(op)) != sizeof(op) || op.what != OP_START ||
	    setresgid(0, 0, 0) || setresuid(0, 0, 0) ||
	    write(out, &ret, sizeof(ret)) != sizeof(ret))
		_exit(1);
	all = permitted_caps();
	while (read(in, &op, sizeof(op)) == sizeof(op) && op.what != OP_QUIT) {
		ret = perform(&op, all);
		if (write(out, &ret, sizeof(ret)) != sizeof(ret))
			_exit(1);
	}
	_exit(0);
}

static int run_op(int e, const struct op *op);

static const char *start_executor(int e)
{
	const struct op start = { .what = OP_START };
	int to[2], from[2], ready[2];
	char path[64], c;
	pid_t pid;

	if (pipe(to) || pipe(from) || pipe(ready))
		return "pipe";
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return "fork";
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		close(ready[0]);
		if (unshare(CLONE_NEWUSER) || write(ready[1], "u", 1) != 1)
			_exit(1);
		close(ready[1]);
		/* The first op arrives once the maps are written. */
		executor_loop(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return "a user namespace (CONFIG_USER_NS) could not be created";
	close(ready[0]);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	if (write_file(path, exec_map[e]))
		return "cannot write uid_map";
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	if (write_file(path, exec_map[e]))
		return "cannot write gid_map";
	executors[e].to = to[1];
	executors[e].from = from[0];
	executors[e].pid = pid;
	if (run_op(e, &start))
		return "cannot become root in a user namespace";
	return NULL;
}

static int run_op(int e, const struct op *op)
{
	static uint64_t all;
	int ret;

	if (e == EXEC_INIT) {
		if (!all)
			all = permitted_caps();
		return perform(op, all);
	}
	if (write(executors[e].to, op, sizeof(*op)) != sizeof(*op) ||
	    read(executors[e].from, &ret, sizeof(ret)) != sizeof(ret))
		return EXEC_BROKEN;
	return ret;
}

/* --- fixtures ----------------------------------------------------------- */

static const char *fail_why;
static char fail_buf[256];

/* Record why the setup failed, with errno's text unless errno is 0. */
static int failed(const char *fmt, ...)
{
	va_list ap;
	int err = errno;

	va_start(ap, fmt);
	vsnprintf(fail_buf, sizeof(fail_buf), fmt, ap);
	va_end(ap);
	if (err)
		snprintf(fail_buf + strlen(fail_buf),
			 sizeof(fail_buf) - strlen(fail_buf), ": %s",
			 strerror(err));
	fail_why = fail_buf;
	return -1;
}

static int make_node(const char *path, mode_t type_mode, dev_t dev,
		     unsigned int uid, unsigned int gid, mode_t mode)
{
	if (S_ISDIR(type_mode)) {
		if (mkdir(path, 0700))
			return failed("mkdir %s", path);
	} else if (mknod(path, type_mode | 0600, dev)) {
		return failed("mknod %s", path);
	}
	/* chown first: it clears setuid and setgid. */
	if (chown(path, uid, gid) || chmod(path, mode))
		return failed("chown/chmod %s", path);
	return 0;
}

/*
 * An access ACL: owner and other from the mode, one named user and one
 * named group with the same permissions, a mask that always grants read.
 */
static int set_acl(const char *path, const struct source *src)
{
	struct {
		struct posix_acl_xattr_header header;
		struct posix_acl_xattr_entry e[6];
	} acl = {
		.header.a_version = POSIX_ACL_XATTR_VERSION,
		.e = {
			{ ACL_USER_OBJ, (src->mode >> 6) & 7, ACL_UNDEFINED_ID },
			{ ACL_USER, src->acl_perm, src->acl_user },
			{ ACL_GROUP_OBJ, (src->mode >> 3) & 7, ACL_UNDEFINED_ID },
			{ ACL_GROUP, src->acl_perm, src->acl_group },
			{ ACL_MASK, src->acl_perm | 4, ACL_UNDEFINED_ID },
			{ ACL_OTHER, src->mode & 7, ACL_UNDEFINED_ID },
		},
	};

	if (setxattr(path, "system.posix_acl_access", &acl, sizeof(acl), 0))
		return failed("set the ACL of %s (CONFIG_TMPFS_POSIX_ACL?)",
			      path);
	return 0;
}

static void source_path(int view, int i, char *buf, size_t size)
{
	snprintf(buf, size, "%s/src/%d", view ? MAPPED : RAW, i);
}

static int make_fixtures(void)
{
	char path[192];
	unsigned int d, l;
	int i;

	if (make_node(RAW "/tgt", S_IFDIR, 0, 0, 0, 0777) ||
	    make_node(RAW "/tgt/f", S_IFREG, 0, 0, 0, 0666) ||
	    make_node(RAW "/src", S_IFDIR, 0, 0, 0, 0755) ||
	    make_node(RAW "/dst", S_IFDIR, 0, 0, 0, 0777))
		return -1;
	for (d = 0; d < NR_DIR_OWNERS * NR_DIR_MODES; d++) {
		snprintf(path, sizeof(path), RAW "/s%u", d);
		if (make_node(path, S_IFDIR, 0, dir_owners[d / NR_DIR_MODES],
			      0, dir_modes[d % NR_DIR_MODES]))
			return -1;
		for (l = 0; l < NR_LINK_OWNERS; l++) {
			/* l<n> points to a file, d<n> to a directory. */
			snprintf(path, sizeof(path), RAW "/s%u/l%u", d, l);
			if (symlink("../tgt/f", path) ||
			    lchown(path, link_owners[l], 0))
				return failed("symlink %s", path);
			snprintf(path, sizeof(path), RAW "/s%u/d%u", d, l);
			if (symlink("../tgt", path) ||
			    lchown(path, link_owners[l], 0))
				return failed("symlink %s", path);
		}
	}
	for (i = 0; i < NR_SOURCES; i++) {
		const struct source *src = &sources[i];
		static const mode_t type[NR_SRC_TYPES] = {
			S_IFREG, S_IFIFO, S_IFCHR, S_IFDIR, S_IFLNK,
		};

		source_path(VIEW_PLAIN, i, path, sizeof(path));
		if (src->type == SRC_SYMLINK) {
			if (symlink("../tgt/f", path) ||
			    lchown(path, src->uid, src->gid))
				return failed("symlink %s", path);
			continue;
		}
		if (make_node(path, type[src->type], makedev(1, 3), src->uid,
			      src->gid, src->mode))
			return -1;
		if (src->acl && set_acl(path, src))
			return -1;
	}
	for (i = 0; i < NR_SOURCES; i++) {
		struct stat st;

		source_path(VIEW_PLAIN, i, path, sizeof(path));
		if (lstat(path, &st))
			return failed("lstat %s", path);
		sources[i].actual = st.st_mode;
	}
	return 0;
}

static int mount_views(void)
{
	struct {
		uint64_t attr_set, attr_clr, propagation, userns_fd;
	} attr = { .attr_set = MOUNT_ATTR_IDMAP };
	int tree, ns;
	const char *why;
	pid_t pid;
	int hold[2], ready[2];
	char path[64], c;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE,
					  NULL))
		return failed("a private mount namespace");
	mkdir(BASE, 0755);
	if (mount("tmpfs", BASE, "tmpfs", 0, "mode=0755"))
		return failed("mount a tmpfs on " BASE);
	if (mkdir(RAW, 0755) || mkdir(MAPPED, 0755) ||
	    mount("tmpfs", RAW, "tmpfs", 0, "mode=0755"))
		return failed("mount a tmpfs on " RAW);

	/* A user namespace with the idmapping, kept by an idle child. */
	if (pipe(hold) || pipe(ready))
		return failed("pipe");
	pid = fork();
	if (pid < 0)
		return failed("fork");
	if (pid == 0) {
		close(hold[1]);
		close(ready[0]);
		if (unshare(CLONE_NEWUSER) || write(ready[1], "u", 1) != 1)
			_exit(1);
		_exit(read(hold[0], &c, 1) < 0);
	}
	close(hold[0]);
	close(ready[1]);
	why = read(ready[0], &c, 1) == 1 ? NULL :
		"create a user namespace (CONFIG_USER_NS)";
	close(ready[0]);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	if (!why && write_file(path, IDMAP))
		why = "write the idmap's uid_map";
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	if (!why && write_file(path, IDMAP))
		why = "write the idmap's gid_map";
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	ns = why ? -1 : open(path, O_RDONLY | O_CLOEXEC);
	close(hold[1]);
	waitpid(pid, NULL, 0);
	if (why || ns < 0) {
		if (why)
			errno = 0;
		return failed("%s", why ? why : "open the user namespace");
	}
	attr.userns_fd = ns;
	tree = syscall(SYS_open_tree, AT_FDCWD, RAW,
		       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		return failed("open_tree(OPEN_TREE_CLONE)");
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr,
		    sizeof(attr)))
		return failed("mount_setattr(MOUNT_ATTR_IDMAP) on a tmpfs");
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, MAPPED,
		    MOVE_MOUNT_F_EMPTY_PATH))
		return failed("move_mount");
	close(tree);
	close(ns);
	return 0;
}

/* --- sysctls -------------------------------------------------------------- */

static const char *const knobs[] = {
	"/proc/sys/fs/protected_symlinks",
	"/proc/sys/fs/protected_hardlinks",
	"/proc/sys/kernel/yama/protected_sticky_symlinks",
	"/proc/sys/kernel/yama/protected_nonaccess_hardlinks",
	"/proc/sys/fs/protected_regular",
	"/proc/sys/fs/protected_fifos",
};
#define NR_KNOBS (sizeof(knobs) / sizeof(knobs[0]))
static char saved[NR_KNOBS][16];
static int knobs_saved;

static void restore_knobs(void)
{
	unsigned int i;

	if (!knobs_saved)
		return;
	for (i = 0; i < NR_KNOBS; i++)
		if (write_file(knobs[i], saved[i]))
			fprintf(stdout, "# cannot restore %s\n", knobs[i]);
}

static int save_knobs(void)
{
	unsigned int i;

	for (i = 0; i < NR_KNOBS; i++) {
		int fd = open(knobs[i], O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0)
			return -1;
		n = read(fd, saved[i], sizeof(saved[i]) - 1);
		close(fd);
		if (n <= 0)
			return -1;
		saved[i][n] = '\0';
	}
	knobs_saved = 1;
	return 0;
}

/* Only the VFS's rules (vfs=1), or only Yama's (vfs=0). */
static int set_mode(int vfs)
{
	const char *v[NR_KNOBS] = {
		vfs ? "1" : "0", vfs ? "1" : "0",
		vfs ? "0" : "1", vfs ? "0" : "1", "0", "0",
	};
	unsigned int i;

	for (i = 0; i < NR_KNOBS; i++)
		if (write_file(knobs[i], v[i]))
			return failed("write %s", knobs[i]);
	return 0;
}

/* --- running cases -------------------------------------------------------- */

struct verdicts {
	int result;		/* the case's operation */
	int trailing;		/* intermediate: the same link, trailing */
};

static int run_case(uint64_t index, const struct dcase *c,
		    struct verdicts *v)
{
	const char *root = c->view ? MAPPED : RAW;
	struct op op = {
		.fsuid = c->fsuid, .fsgid = c->fsgid, .sgid = c->sgid,
		.caps = c->caps, .set_euid = c->set_euid,
	};

	v->trailing = 0;
	if (c->kind == HARDLINK) {
		op.what = OP_LINK;
		source_path(c->view, c->src, op.path, sizeof(op.path));
		snprintf(op.path2, sizeof(op.path2), "%s/dst/c%" PRIu64, root,
			 index);
		v->result = run_op(c->exec, &op);
		if (v->result == 0 && unlink(op.path2))
			return failed("unlink %s", op.path2);
		errno = 0;
		return v->result == EXEC_BROKEN ?
			failed("executor %s", exec_name[c->exec]) : 0;
	}
	op.what = OP_OPEN;
	if (c->kind == SYM_TRAILING) {
		snprintf(op.path, sizeof(op.path), "%s/s%d/l%d", root, c->dir,
			 c->link_owner);
		op.flags = open_modes[c->open_mode].flags;
	} else {
		/* The same link as the trailing component first. */
		snprintf(op.path, sizeof(op.path), "%s/s%d/d%d", root, c->dir,
			 c->link_owner);
		op.flags = O_RDONLY;
		v->trailing = run_op(c->exec, &op);
		strcat(op.path, "/f");
		op.flags = open_modes[c->open_mode].flags;
	}
	v->result = run_op(c->exec, &op);
	errno = 0;
	if (v->result == EXEC_BROKEN || v->trailing == EXEC_BROKEN)
		return failed("executor %s", exec_name[c->exec]);
	return 0;
}

/* The verdict Yama must give, from what the VFS gave. */
static int expected(const struct dcase *c, const struct verdicts *vfs)
{
	if (c->kind == SYM_INTERMEDIATE && vfs->trailing == EACCES)
		return EACCES;
	return vfs->result;
}

/* Groups reported as KTAP results. */
enum { G_TRAILING, G_INTERMEDIATE, G_LINK_INIT, G_LINK_USERNS, NR_GROUPS };
static const char *const group_name[NR_GROUPS] = {
	"symlink_trailing", "symlink_intermediate", "hardlink_initial_ns",
	"hardlink_user_ns",
};

/*
 * Per group and mount: cases, agreements, and what the expected verdict
 * was: a refusal by the rule, a success, or another error that no link
 * rule gives (EOVERFLOW, EEXIST, ELOOP, a directory's EPERM), where the two
 * passes can hardly differ. A group proves something only when the rule
 * both refused and allowed on each mount.
 */
struct tally {
	uint64_t cases, agree;
	uint64_t refused[2], allowed[2], other[2];
};

static int group_of(const struct dcase *c)
{
	if (c->kind == SYM_TRAILING)
		return G_TRAILING;
	if (c->kind == SYM_INTERMEDIATE)
		return G_INTERMEDIATE;
	return c->exec == EXEC_INIT ? G_LINK_INIT : G_LINK_USERNS;
}

/* The verdict is the link rule's refusal (not a directory's EPERM). */
static int is_refusal(const struct dcase *c, int verdict)
{
	if (c->kind != HARDLINK)
		return verdict == EACCES;
	return verdict == EPERM && sources[c->src].type != SRC_DIR;
}

static int option(int argc, char **argv, const char *name, char *buf,
		  size_t size)
{
	char cmdline[4096], key[64], *tok, *save;
	int i, found = 0, fd;
	ssize_t n;

	snprintf(key, sizeof(key), "--%s", name);
	for (i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], key)) {
			snprintf(buf, size, "%s", argv[i + 1]);
			return 1;
		}
	fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, cmdline, sizeof(cmdline) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	cmdline[n] = '\0';
	snprintf(key, sizeof(key), "vfsdiff.%s=", name);
	for (tok = strtok_r(cmdline, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (!strncmp(tok, key, strlen(key))) {
			/* The last one wins, as for kernel parameters. */
			snprintf(buf, size, "%s", tok + strlen(key));
			found = 1;
		}
	return found;
}

static uint64_t number(const char *name, const char *text)
{
	char *end;
	uint64_t n;

	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-') {
		printf("Bail out! %s=%s is not a number\n", name, text);
		exit(1);
	}
	return n;
}

static void skip(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(KSFT_SKIP);
}

static void bail(const char *what)
{
	restore_knobs();
	printf("Bail out! %s: %s\n", what, fail_why ? fail_why : "");
	exit(1);
}

int main(int argc, char **argv)
{
	static const char *const needed[] = {
		"/proc/sys/kernel/yama/protected_sticky_symlinks",
		"/proc/sys/kernel/yama/protected_nonaccess_hardlinks",
		"/proc/sys/fs/protected_symlinks",
	};
	struct tally tally[NR_GROUPS] = { 0 };
	uint64_t ncases = DEFAULT_CASES, first = 0, i, disagree = 0;
	struct verdicts *vfs;
	char arg[64];
	const char *why;
	struct timespec t0, t1;
	int one = 0, e, g, failures = 0;
	unsigned int k;

	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	seed = DEFAULT_SEED;
	if (option(argc, argv, "seed", arg, sizeof(arg))) {
		if (!strcmp(arg, "random")) {
			if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
				seed = (uint64_t)time(NULL) * 2654435761ULL;
		} else {
			seed = number("seed", arg);
		}
	}
	if (option(argc, argv, "cases", arg, sizeof(arg)))
		ncases = number("cases", arg);
	if (option(argc, argv, "case", arg, sizeof(arg))) {
		first = number("case", arg);
		ncases = 1;
		one = 1;
	}
	if (!ncases) {
		printf("Bail out! cases=0: nothing to compare\n");
		return 1;
	}
	/* The seed first, so that a long run that dies can be replayed. */
	printf("TAP version 13\n");
	printf("# seed %" PRIu64 ", %" PRIu64 " case(s) from #%" PRIu64
	       " (one alone: yama_vfs_diff --seed %" PRIu64
	       " --case N, or make vfs-diff VFSDIFF_SEED=%" PRIu64
	       " VFSDIFF_CASE=N)\n", seed, ncases, first, seed, seed);

	if (geteuid() != 0)
		skip("needs root in the initial user namespace");
	for (k = 0; k < sizeof(needed) / sizeof(needed[0]); k++)
		if (access(needed[k], W_OK))
			skip("no writable sysctl files of both rules (Yama with SECURITY_YAMA_SYMLINKS and SECURITY_YAMA_HARDLINKS, PROC_SYSCTL)");
	if (save_knobs())
		skip("cannot read the fs.protected_* and kernel.yama.* sysctls");

	make_sources();
	if (mount_views())
		skip(fail_why);
	if (make_fixtures())
		bail("fixtures");
	for (e = EXEC_NS1; e < NR_EXEC; e++) {
		why = start_executor(e);
		if (why)
			skip(why);
	}

	vfs = calloc(ncases, sizeof(*vfs));
	if (!vfs)
		bail("out of memory");
	if (set_mode(1))
		bail("sysctls");
	for (i = 0; i < ncases; i++) {
		struct dcase c;

		make_case(first + i, &c);
		if (run_case(first + i, &c, &vfs[i]))
			bail("VFS pass");
	}
	if (set_mode(0))
		bail("sysctls");
	for (i = 0; i < ncases; i++) {
		struct verdicts yama;
		struct dcase c;
		int want, same;

		make_case(first + i, &c);
		if (run_case(first + i, &c, &yama))
			bail("Yama pass");
		want = expected(&c, &vfs[i]);
		g = group_of(&c);
		tally[g].cases++;
		if (is_refusal(&c, want))
			tally[g].refused[c.view]++;
		else if (!want)
			tally[g].allowed[c.view]++;
		else
			tally[g].other[c.view]++;
		/* An intermediate link must also agree as a trailing one. */
		same = yama.result == want && yama.trailing == vfs[i].trailing;
		if (same) {
			tally[g].agree++;
			if (!one)
				continue;
		} else {
			disagree++;
		}
		if (one || disagree <= MAX_SHOWN) {
			char buf[512], trailing[64] = "";

			describe(first + i, &c, buf, sizeof(buf));
			if (c.kind == SYM_INTERMEDIATE)
				snprintf(trailing, sizeof(trailing),
					 " (the link as trailing component: VFS %s, ",
					 errname(vfs[i].trailing));
			printf("# %s %s\n#   VFS rule alone: %s%s",
			       same ? "AGREE" : "DISAGREE", buf,
			       errname(vfs[i].result), trailing);
			if (c.kind == SYM_INTERMEDIATE)
				printf("Yama %s)", errname(yama.trailing));
			printf("; Yama rule alone: %s; expected %s\n",
			       errname(yama.result), errname(want));
		}
	}
	restore_knobs();
	for (e = EXEC_NS1; e < NR_EXEC; e++) {
		struct op quit = { .what = OP_QUIT };

		if (write(executors[e].to, &quit, sizeof(quit)) == sizeof(quit))
			waitpid(executors[e].pid, NULL, 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	printf("1..%d\n", NR_GROUPS);
	for (g = 0; g < NR_GROUPS; g++) {
		struct tally *t = &tally[g];
		int exercised = one || (t->refused[0] && t->allowed[0] &&
					t->refused[1] && t->allowed[1]);
		int ok = t->agree == t->cases && exercised;

		failures += !ok;
		printf("# %s: %" PRIu64 " of %" PRIu64 " agree; expected, plain/idmapped mount: refused by the rule %"
		       PRIu64 "/%" PRIu64 ", allowed %" PRIu64 "/%" PRIu64
		       ", other errors %" PRIu64 "/%" PRIu64 "%s\n",
		       group_name[g], t->agree, t->cases, t->refused[0],
		       t->refused[1], t->allowed[0], t->allowed[1],
		       t->other[0], t->other[1],
		       exercised ? "" : "; NOT EXERCISED: the rule must refuse and allow on both mounts");
		printf("%s %d %s\n", ok ? "ok" : "not ok", g + 1, group_name[g]);
	}
	printf("# vfs_diff: seed=%" PRIu64 " cases=%" PRIu64 " agree=%" PRIu64
	       " disagree=%" PRIu64 " seconds=%.1f\n", seed, ncases,
	       ncases - disagree, disagree,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return failures ? 1 : 0;
}
