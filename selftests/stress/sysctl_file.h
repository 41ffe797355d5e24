/* SPDX-License-Identifier: GPL-2.0 */
/* What yama_stress and yama_badinput both need of a sysctl file. */
#ifndef SYSCTL_FILE_H
#define SYSCTL_FILE_H

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* The number in the file at path, or -1 when it cannot be read. */
static inline int read_int(const char *path)
{
	char buf[32];
	int fd, n;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return atoi(buf);
}

#endif
