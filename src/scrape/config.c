/*
 * config.c
 *		Load the scrape configuration: one ScrapeTarget per enabled profile
 *		endpoint of every target of every enabled job.
 *
 * The SQL function parca.scrape_endpoints() does the joining, URL building
 * and labelling; this file adds the targets of file_sd files and copies
 * the rows into the worker's memory.  The caller runs it inside a
 * transaction with SPI connected.  Also parca.scrape_url_encode(), which
 * scrape_endpoints() uses to build the URLs.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "scrape/scrape.h"
#include "scrape/scrape_internal.h"

/* The targets of the jobs' file_sd files, as the argument of scrape_endpoints(). */
static char *
file_sd_argument(void)
{
	StringInfoData buf;
	uint64		njobs;
	SPITupleTable *jobs;
	bool		first = true;

	if (SPI_execute("SELECT job_name, file_sd_files FROM parca.scrape_jobs "
					"WHERE enabled AND file_sd_files OPERATOR(pg_catalog.<>) '{}' ORDER BY job_name",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute failed");
	njobs = SPI_processed;
	jobs = SPI_tuptable;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (uint64 i = 0; i < njobs; i++)
	{
		bool		isnull;
		char	   *job = TextDatumGetCString(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 1, &isnull));
		ArrayType  *files = DatumGetArrayTypeP(SPI_getbinval(jobs->vals[i], jobs->tupdesc, 2, &isnull));
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;
		List	   *patterns = NIL;

		deconstruct_array(files, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
		for (int k = 0; k < nelems; k++)
			if (!nulls[k])
				patterns = lappend(patterns, TextDatumGetCString(elems[k]));

		if (!first)
			appendStringInfoChar(&buf, ',');
		first = false;
		escape_json(&buf, job);
		appendStringInfoChar(&buf, ':');
		appendStringInfoString(&buf, file_sd_targets(job, patterns));
	}
	appendStringInfoChar(&buf, '}');
	SPI_freetuptable(jobs);
	return buf.data;
}

ScrapeTarget *
scrape_config_load(int *ntargets, MemoryContext cxt)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	ScrapeTarget *targets;
	uint64		n;

	file_sd_begin_load();
	args[0] = CStringGetTextDatum(file_sd_argument());
	file_sd_end_load();

	if (SPI_execute_with_args("SELECT job_name, url, labels::pg_catalog.text, profile, interval_ms, timeout_ms "
							  "FROM parca.scrape_endpoints($1::pg_catalog.jsonb)",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed");

	n = SPI_processed;
	targets = MemoryContextAllocZero(cxt, sizeof(ScrapeTarget) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		ScrapeTarget *t = &targets[i];
		bool		isnull;

		t->job = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 1));
		t->url = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 2));
		t->labels = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 3));
		t->profile_name = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 4));
		t->interval_ms = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		t->timeout_ms = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
		t->slot = -1;
	}
	*ntargets = (int) n;
	return targets;
}

bool
scrape_jobs_enabled(void)
{
	bool		isnull;

	if (SPI_execute("SELECT EXISTS (SELECT FROM parca.scrape_jobs WHERE enabled)", true, 0)
		!= SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read parca.scrape_jobs");
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* Whether c is an RFC 3986 unreserved character, kept as it is in a URL. */
static bool
unreserved(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		c == '-' || c == '.' || c == '_' || c == '~';
}

/*
 * parca.scrape_url_encode(text): the text's UTF-8 bytes percent-encoded,
 * RFC 3986 unreserved characters kept, for a URL query component.
 */
PG_FUNCTION_INFO_V1(parca_scrape_url_encode);
Datum
parca_scrape_url_encode(PG_FUNCTION_ARGS)
{
	static const char hex[] = "0123456789ABCDEF";
	text	   *in = PG_GETARG_TEXT_PP(0);
	int			len = VARSIZE_ANY_EXHDR(in);
	const unsigned char *utf8 = (const unsigned char *)
		pg_server_to_any(VARDATA_ANY(in), len, PG_UTF8);
	Size		outlen = 0;
	text	   *result;
	char	   *out;

	if ((const char *) utf8 != VARDATA_ANY(in))
		len = strlen((const char *) utf8);
	/* the result's length first: it is written once, in place (up to 3 bytes a byte) */
	for (int i = 0; i < len; i++)
		outlen += unreserved(utf8[i]) ? 1 : 3;
	if (outlen > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the percent-encoded text would be longer than %zu bytes", MaxAllocSize - VARHDRSZ)));
	result = palloc(VARHDRSZ + outlen);
	SET_VARSIZE(result, VARHDRSZ + outlen);
	out = VARDATA(result);
	for (int i = 0; i < len; i++)
	{
		unsigned char c = utf8[i];

		if ((i & 0xffff) == 0)
			CHECK_FOR_INTERRUPTS();
		if (unreserved(c))
			*out++ = (char) c;
		else
		{
			*out++ = '%';
			*out++ = hex[c >> 4];
			*out++ = hex[c & 15];
		}
	}
	PG_RETURN_TEXT_P(result);
}
