/*
 * guard.c
 *		The symbolizer's guard against reading a file that takes the server
 *		down, again and again.
 *
 * Debug information is parsed in the maintenance worker (libelf, libdw), and
 * a file that crashes a parser ends the worker by a signal: the postmaster
 * then restarts every session of every user, and the worker, started again,
 * would read the same file at once.  So before the worker reads a build
 * id's file it notes the build id in a file of the data directory
 * (pg_parca/symbolizer.<database oid>), and removes the note when it is
 * done, whatever the outcome, or exits (an error, SIGTERM).  A note found
 * at the start of a pass means the worker ended without exiting (a signal,
 * or the postmaster's SIGQUIT to every process after any crash) while that
 * file was read.  The second time in a row for the same build id, the
 * worker stops reading it: a stored file is marked
 * (parca.debuginfo.symbolized_at = 'infinity', until debug information is
 * stored for it again), and one fetched from debuginfod is noted missing
 * (not fetched again before parca.debuginfod_retry).  Once is forgiven: a
 * crash of any other process takes the worker down too.
 */
#include "postgres.h"

#include <unistd.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "utils/builtins.h"

#include "symbolize/debuginfod.h"
#include "symbolize/symbolize_internal.h"

#define GUARD_DIR "pg_parca"
#define GUARD_LINE_MAX (1024 + 64)	/* a build id of 1024 digits, a kind, a count */

/* The build id found noted at a pass's start, and how often in a row. */
static char interrupted_build_id[1024 + 1];
static bool interrupted_fetch;
static int	interrupted_times;

/* The note's path: a worker serves one database for its life. */
static const char *
guard_path(void)
{
	static char path[sizeof(GUARD_DIR) + 32];

	if (path[0] == '\0')
		snprintf(path, sizeof(path), "%s/symbolizer.%u", GUARD_DIR, MyDatabaseId);
	return path;
}

/* An exit that runs its callbacks (an error, SIGTERM) is no crash. */
static void
remove_at_exit(int code, Datum arg)
{
	symbolize_guard_end();
}

void
symbolize_guard_begin(const char *build_id, bool fetch)
{
	static bool exit_callback = false;
	const char *path = guard_path();
	int			before = strcmp(build_id, interrupted_build_id) == 0 &&
		fetch == interrupted_fetch ? interrupted_times : 0;
	FILE	   *f;

	if (!exit_callback)
	{
		before_shmem_exit(remove_at_exit, (Datum) 0);
		exit_callback = true;
	}
	if (MakePGDirectory(GUARD_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", GUARD_DIR)));
	f = AllocateFile(path, "w");
	if (f == NULL ||
		fprintf(f, "%s %s %d\n", build_id, fetch ? "fetch" : "stored", before) < 0 ||
		FreeFile(f) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
}

void
symbolize_guard_end(void)
{
	const char *path = guard_path();

	if (unlink(path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
}

bool
symbolize_guard_noted(void)
{
	return access(guard_path(), F_OK) == 0;
}

/* Stop reading build_id's file; in a transaction, connected to SPI. */
static void
give_up(const char *build_id, bool fetch)
{
	static const char reason[] = "the server went down twice while the symbolizer read it";

	if (fetch)
		debuginfod_note_missing(build_id, reason);
	else
	{
		Oid			argtypes[1] = {TEXTOID};
		Datum		args[1] = {CStringGetTextDatum(build_id)};

		if (SPI_execute_with_args("UPDATE parca.debuginfo SET symbolized_at = 'infinity' "
								  "WHERE build_id OPERATOR(pg_catalog.=) $1",
								  1, argtypes, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not update parca.debuginfo");
	}
	ereport(WARNING,
			(errmsg("parca symbolizer: build id %s: %s; not read again", build_id, reason),
			 errhint(fetch ? "It is not fetched again before parca.debuginfod_retry has passed." :
					 "Store its debug information again to have it read again.")));
}

void
symbolize_guard_recover(void)
{
	const char *path = guard_path();
	FILE	   *f = AllocateFile(path, "r");
	char		line[GUARD_LINE_MAX + 1];
	char		build_id[1024 + 1];
	char		kind[8];
	int			before;

	if (f == NULL)
		return;
	if (fgets(line, sizeof(line), f) != NULL &&
		sscanf(line, "%1024s %7s %d", build_id, kind, &before) == 3 && before >= 0)
	{
		bool		fetch = strcmp(kind, "fetch") == 0;

		if (before + 1 >= 2)
		{
			give_up(build_id, fetch);
			interrupted_build_id[0] = '\0';
		}
		else
		{
			ereport(LOG,
					(errmsg("parca symbolizer: the server went down while build id %s was read; "
							"it is read once more", build_id)));
			strlcpy(interrupted_build_id, build_id, sizeof(interrupted_build_id));
			interrupted_fetch = fetch;
			interrupted_times = before + 1;
		}
	}
	FreeFile(f);
	/* after give_up: should it fail, the note is found again next pass */
	symbolize_guard_end();
}
