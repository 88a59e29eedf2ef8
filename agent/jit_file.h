/*
 * jit_file.h
 *		Opening the files a process writes about its JIT code (perf maps,
 *		jitdump files) without being led elsewhere: inside the process's
 *		own root (/proc/PID/root, so containers work), never through a
 *		symbolic link, only regular files, only files owned by the
 *		process's user or root.  A file that fails any of this is ignored.
 */
#ifndef AGENT_JIT_FILE_H
#define AGENT_JIT_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Who may own a process's JIT files: its real and effective user, root. */
typedef struct JitOwner
{
	uid_t		uid;
	uid_t		euid;
} JitOwner;

/*
 * A directory of the process's file system (such as "tmp"), opened with
 * O_PATH through /proc/PID/root without following links; -1 if it cannot
 * be.
 */
extern int	jit_open_dir(uint32_t pid, const char *dir);

/*
 * The regular file name in that directory, opened for reading without
 * following a link and checked (see above); -1 otherwise.
 */
extern int	jit_open_file(int dirfd, const char *name, const JitOwner *owner);

/*
 * The file the process has mapped at [start, end) (/proc/PID/map_files:
 * the very file, wherever it is), checked likewise; -1 otherwise.
 */
extern int	jit_open_mapped(uint32_t pid, uint64_t start, uint64_t end,
							const JitOwner *owner);

#endif							/* AGENT_JIT_FILE_H */
