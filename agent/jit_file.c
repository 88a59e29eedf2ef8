/*
 * jit_file.c
 *		Opening a process's JIT files safely; see jit_file.h.
 *
 * The agent runs as root and the files are written by whoever runs the
 * program: a link planted as /tmp/perf-PID.map must not make the agent
 * read another file (its contents would become frame names), a FIFO must
 * not block it, and a map written by another user than the process's
 * must not name its frames.  O_NOFOLLOW refuses a link as the last
 * component; the directory is opened alone, with O_NOFOLLOW too, so no
 * component is a link; /proc/PID/root is the process's root, so an
 * absolute link inside a container could not escape it anyway.
 */
#define _GNU_SOURCE
#include "jit_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int
jit_open_dir(uint32_t pid, const char *dir)
{
	char		path[64];
	int			root;
	int			fd;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	if ((root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	fd = openat(root, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(root);
	return fd;
}

/* Keep fd if it is a regular file the process's user (or root) owns. */
static int
checked(int fd, const JitOwner *owner)
{
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		(st.st_uid != 0 && st.st_uid != owner->uid && st.st_uid != owner->euid))
	{
		close(fd);
		return -1;
	}
	return fd;
}

int
jit_open_file(int dirfd, const char *name, const JitOwner *owner)
{
	if (dirfd < 0)
		return -1;
	/* O_NONBLOCK: a FIFO in its place must not hold the agent up */
	return checked(openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC),
				   owner);
}

int
jit_open_mapped(uint32_t pid, uint64_t start, uint64_t end, const JitOwner *owner)
{
	char		path[96];

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long) start, (unsigned long long) end);
	return checked(open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), owner);
}
