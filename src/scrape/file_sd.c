/*
 * file_sd.c
 *		Prometheus file-based service discovery: files of JSON target groups.
 *
 * A job names files (the last path component may be a glob).  Each file's
 * targets are validated by parca.scrape_file_sd_targets() and kept with
 * the file's inode, size and modification time; file_sd_changed() tells
 * the worker when a file or the set of files matching a glob changed.  A
 * file that cannot be read or parsed is reported once, and its previous
 * good targets stay in use, as Prometheus does.
 */
#include "postgres.h"

#include <glob.h>
#include <sys/stat.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "scrape/scrape_internal.h"

/* Largest file_sd file read. */
#define FILE_SD_MAX_SIZE (16 * 1024 * 1024)

typedef struct SdFile
{
	char	   *path;
	ino_t		ino;
	off_t		size;
	struct timespec mtime;
	bool		used;			/* matched during the current load */
	bool		checked;		/* matched during file_sd_changed() */
	char	   *targets;		/* JSON array of {address, labels}: last good */
} SdFile;

static MemoryContext sd_cxt = NULL;
static List *sd_files = NIL;	/* of SdFile * */
static List *sd_patterns = NIL; /* of char *: every pattern of the last load */

static SdFile *
find_file(const char *path)
{
	ListCell   *lc;

	foreach(lc, sd_files)
	{
		SdFile	   *f = lfirst(lc);

		if (strcmp(f->path, path) == 0)
			return f;
	}
	return NULL;
}

static bool
same_stat(const SdFile *f, const struct stat *st)
{
	return f->ino == st->st_ino && f->size == st->st_size &&
		f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* Paths matching a pattern, sorted; a missing plain file matches nothing. */
static void
expand(const char *pattern, glob_t *g)
{
	memset(g, 0, sizeof(*g));
	if (glob(pattern, GLOB_ERR, NULL, g) != 0)
	{
		globfree(g);
		memset(g, 0, sizeof(*g));
	}
}

void
file_sd_begin_load(void)
{
	ListCell   *lc;

	if (sd_cxt == NULL)
		sd_cxt = AllocSetContextCreate(TopMemoryContext, "parca file_sd",
									   ALLOCSET_SMALL_SIZES);
	foreach(lc, sd_files)
		((SdFile *) lfirst(lc))->used = false;
	list_free_deep(sd_patterns);
	sd_patterns = NIL;
}

/* Read a file and turn it into targets; NULL (after a warning) on failure. */
static char *
read_targets(const char *job, const char *path)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	char	   *volatile result = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		FILE	   *fp;
		StringInfoData content;
		char		chunk[8192];
		size_t		n;
		Oid			argtypes[1] = {TEXTOID};
		Datum		args[1];

		fp = AllocateFile(path, "r");
		if (fp == NULL)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", path)));
		initStringInfo(&content);
		while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		{
			if (content.len + n > FILE_SD_MAX_SIZE)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("file \"%s\" is larger than %d bytes", path, FILE_SD_MAX_SIZE)));
			appendBinaryStringInfo(&content, chunk, n);
		}
		if (ferror(fp))
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", path)));
		FreeFile(fp);
		/* text: neither NUL nor bytes invalid in the database encoding */
		(void) pg_verify_mbstr(GetDatabaseEncoding(), content.data, content.len, false);

		args[0] = CStringGetTextDatum(content.data);
		if (SPI_execute_with_args("SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
								  "'address', address, 'labels', labels)), '[]')::pg_catalog.text "
								  "FROM parca.scrape_file_sd_targets($1)",
								  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_with_args failed");
		result = MemoryContextStrdup(sd_cxt, SPI_getvalue(SPI_tuptable->vals[0],
														  SPI_tuptable->tupdesc, 1));
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
		ereport(WARNING,
				(errcode(edata->sqlerrcode),
				 errmsg("parca scrape job \"%s\": file_sd file \"%s\" ignored: %s",
						job, path, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return result;
}

/*
 * The targets of a job's file_sd patterns as one JSON array.  Runs in the
 * configuration load's transaction, with SPI connected.
 */
char *
file_sd_targets(const char *job, List *patterns)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	foreach(lc, patterns)
	{
		const char *pattern = lfirst(lc);
		glob_t		g;
		MemoryContext oldcxt = MemoryContextSwitchTo(sd_cxt);

		sd_patterns = lappend(sd_patterns, pstrdup(pattern));
		MemoryContextSwitchTo(oldcxt);

		expand(pattern, &g);
		for (size_t i = 0; i < g.gl_pathc; i++)
		{
			const char *path = g.gl_pathv[i];
			struct stat st;
			SdFile	   *f = find_file(path);

			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			if (f == NULL)
			{
				f = MemoryContextAllocZero(sd_cxt, sizeof(SdFile));
				f->path = MemoryContextStrdup(sd_cxt, path);
				oldcxt = MemoryContextSwitchTo(sd_cxt);
				sd_files = lappend(sd_files, f);
				MemoryContextSwitchTo(oldcxt);
			}
			if (f->targets == NULL || !same_stat(f, &st))
			{
				char	   *targets = read_targets(job, path);

				/* remember the stat even on failure: warn once per change */
				f->ino = st.st_ino;
				f->size = st.st_size;
				f->mtime = st.st_mtim;
				if (targets != NULL)
				{
					if (f->targets)
						pfree(f->targets);
					f->targets = targets;
				}
				else if (f->targets == NULL)
					f->targets = MemoryContextStrdup(sd_cxt, "[]");
			}
			f->used = true;
			if (strcmp(f->targets, "[]") != 0)
			{
				if (!first)
					appendStringInfoChar(&buf, ',');
				first = false;
				/* splice the array's elements */
				appendBinaryStringInfo(&buf, f->targets + 1, strlen(f->targets) - 2);
			}
		}
		globfree(&g);
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* Forget files that no pattern matched in this load. */
void
file_sd_end_load(void)
{
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext oldcxt = MemoryContextSwitchTo(sd_cxt);

	foreach(lc, sd_files)
	{
		SdFile	   *f = lfirst(lc);

		if (f->used)
			kept = lappend(kept, f);
		else
		{
			pfree(f->path);
			if (f->targets)
				pfree(f->targets);
			pfree(f);
		}
	}
	list_free(sd_files);
	sd_files = kept;
	MemoryContextSwitchTo(oldcxt);
}

/* Whether any watched file, or the set of files a pattern matches, changed. */
bool
file_sd_changed(void)
{
	ListCell   *lc;

	foreach(lc, sd_files)
		((SdFile *) lfirst(lc))->checked = false;
	foreach(lc, sd_patterns)
	{
		glob_t		g;
		bool		changed = false;

		expand(lfirst(lc), &g);
		for (size_t i = 0; i < g.gl_pathc && !changed; i++)
		{
			struct stat st;
			SdFile	   *f;

			if (stat(g.gl_pathv[i], &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			f = find_file(g.gl_pathv[i]);
			if (f == NULL || !same_stat(f, &st))
				changed = true;
			else
				f->checked = true;
		}
		globfree(&g);
		if (changed)
			return true;
	}
	/* a file that disappeared */
	foreach(lc, sd_files)
		if (!((SdFile *) lfirst(lc))->checked)
			return true;
	return false;
}
