// SPDX-License-Identifier: GPL-2.0
/*
 * The init of the selftest VM: mount what the tests need, run the programs
 * listed in /tests/list one after the other, and write their KTAP output,
 * nested as run_kselftest.sh does, to the result channel: the second
 * serial port, so that the kernel console (first port) never mixes with
 * it. Then reboot, which ends QEMU (-no-reboot). Linked statically; nothing else is in the initramfs.
 *
 * Kernel command line: selftests.only=NAME[,NAME...] runs those programs of
 * /tests instead of /tests/list (the vfs-diff boot); selftests.timeout=SECONDS
 * overrides the time one program may take (default 600).
 *
 * Environment given to the tests: YAMA_KCONFIG=/kconfig (the .config the
 * kernel was built from) and YAMA_SELFTEST_LOCK=1 (this boot may set
 * ptrace_scope to 3 for good).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define RESULT_TTY "/dev/ttyS1"
#define MAX_TESTS 64
/* Seconds one program may take before it counts as hung. */
static int program_timeout = 600;

static int out = -1;

static void say(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len > (int)sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	if (out >= 0 && write(out, buf, len) < 0)
		perror("init: result channel");
}

static void power_off(void)
{
	if (out >= 0)
		tcdrain(out);
	sync();
	/* No ACPI in this kernel: reboot, which QEMU -no-reboot turns into exit. */
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

static void die(const char *what)
{
	fprintf(stderr, "init: %s: %s\n", what, strerror(errno));
	say("Bail out! init: %s: %s\n", what, strerror(errno));
	power_off();
}

static void mount_fs(const char *type, const char *dir, const char *opts)
{
	mkdir(dir, 0755);
	if (mount(type, dir, type, 0, opts) && errno != EBUSY)
		die(dir);
}

static void open_channel(void)
{
	struct termios t;

	out = open(RESULT_TTY, O_WRONLY | O_NOCTTY);
	if (out < 0)
		die("open " RESULT_TTY);
	if (tcgetattr(out, &t) == 0) {
		cfmakeraw(&t);
		cfsetospeed(&t, B115200);
		tcsetattr(out, TCSANOW, &t);
	}
}

/* Copy the program's output, each line prefixed with "# ". */
static void relay(int fd, char *line, size_t *len, size_t size, int flush)
{
	char buf[1024];
	ssize_t n, i;

	n = flush ? 0 : read(fd, buf, sizeof(buf));
	for (i = 0; i < n; i++) {
		if (*len < size - 1)
			line[(*len)++] = buf[i];
		if (buf[i] == '\n') {
			line[*len] = '\0';
			say("# %s", line);
			*len = 0;
		}
	}
	if (flush && *len) {
		line[*len] = '\0';
		say("# %s\n", line);
		*len = 0;
	}
}

static int run(const char *name, int num)
{
	char path[256], line[4096];
	size_t len = 0;
	int pipefd[2], status = 0;
	time_t deadline;
	pid_t pid;

	snprintf(path, sizeof(path), "/tests/%s", name);
	say("# selftests: yama: %s\n", name);
	if (pipe(pipefd))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char *argv[] = { path, NULL };

		setsid();
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		if (chdir("/tmp"))
			_exit(127);
		execv(path, argv);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);

	deadline = time(NULL) + program_timeout;
	for (;;) {
		struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
		int left = deadline - time(NULL);

		if (left <= 0) {
			kill(-pid, SIGKILL);
			waitpid(pid, NULL, 0);
			relay(pipefd[0], line, &len, sizeof(line), 1);
			close(pipefd[0]);
			say("not ok %d selftests: yama: %s # TIMEOUT %d seconds\n",
			    num, name, program_timeout);
			return 1;
		}
		if (poll(&p, 1, left * 1000) < 0 && errno != EINTR)
			die("poll");
		if (p.revents & POLLIN)
			relay(pipefd[0], line, &len, sizeof(line), 0);
		else if (p.revents & (POLLHUP | POLLERR))
			break;
	}
	relay(pipefd[0], line, &len, sizeof(line), 1);
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");

	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		say("ok %d selftests: yama: %s\n", num, name);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
		say("ok %d selftests: yama: %s # SKIP\n", num, name);
	else if (WIFEXITED(status))
		say("not ok %d selftests: yama: %s # exit=%d\n", num, name,
		    WEXITSTATUS(status));
	else
		say("not ok %d selftests: yama: %s # signal=%d\n", num, name,
		    WTERMSIG(status));
	return 0;
}

/* The value of "key=value" on the kernel command line, or NULL. */
static char *cmdline_value(const char *key)
{
	static char line[4096];
	char *tok, *save, *found = NULL;
	size_t len = strlen(key);
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f)
		die("/proc/cmdline");
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	for (tok = strtok_r(line, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save))
		if (!strncmp(tok, key, len) && tok[len] == '=')
			found = tok + len + 1;
	return found;
}

int main(void)
{
	char *tests[MAX_TESTS], buf[256], *only, *value, *name, *save;
	int count = 0, i;
	FILE *list;

	mount_fs("proc", "/proc", NULL);
	mount_fs("sysfs", "/sys", NULL);
	mount_fs("devtmpfs", "/dev", NULL);
	mount_fs("tmpfs", "/tmp", "mode=1777");
	open_channel();

	value = cmdline_value("selftests.timeout");
	if (value && atoi(value) > 0)
		program_timeout = atoi(value);
	only = cmdline_value("selftests.only");
	if (only) {
		only = strdup(only);
		for (name = strtok_r(only, ",", &save);
		     name && count < MAX_TESTS; name = strtok_r(NULL, ",", &save))
			tests[count++] = name;
	} else {
		list = fopen("/tests/list", "r");
		if (!list)
			die("/tests/list");
		while (count < MAX_TESTS && fgets(buf, sizeof(buf), list)) {
			buf[strcspn(buf, "\n")] = '\0';
			if (buf[0])
				tests[count++] = strdup(buf);
		}
		fclose(list);
	}

	setenv("PATH", "/tests", 1);
	setenv("YAMA_KCONFIG", "/kconfig", 1);
	setenv("YAMA_SELFTEST_LOCK", "1", 1);
	setenv("TMPDIR", "/tmp", 1);

	say("TAP version 13\n1..%d\n", count);
	for (i = 0; i < count; i++)
		if (run(tests[i], i + 1))
			break;
	say("# yama-selftests: end\n");
	power_off();
	return 0;
}
