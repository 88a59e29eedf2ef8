/*
 * debuginfod.c
 *		The debuginfod client; see debuginfod.h and docs/symbolization.md.
 *
 * parca.debuginfod_urls lists servers as DEBUGINFOD_URLS does (URLs
 * separated by white space); a build id's debug information is
 * GET <url>/buildid/<build id>/debuginfo, from the first server that has
 * it.  The fetcher keeps the scrape worker's rules (docs/security.md):
 * http and https only, no redirects, responses no larger than
 * parca.max_debuginfo_size, each transfer within parca.debuginfod_timeout,
 * no compressed transfer encodings (nothing inflates behind the limit's
 * back).  A build id that no server had, or whose file was refused, is
 * noted in parca.debuginfo_missing and not asked for again before
 * parca.debuginfod_retry has passed.  Fetched files are a cache: beyond
 * parca.debuginfod_cache_size the oldest are deleted (their locations keep
 * their names); uploaded files are never deleted.
 */
#include "postgres.h"

#include <curl/curl.h>
#include <limits.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "symbolize/debuginfod.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_internal.h"

/* Build ids asked for per pass: bounds the time one pass takes. */
#define BUILD_IDS_PER_PASS 16

static char *debuginfod_urls = NULL;
static int	debuginfod_timeout_ms = 60000;
static int	debuginfod_retry_s = 3600;
static int	debuginfod_cache_kb = 1024 * 1024;

void
debuginfod_init(void)
{
	DefineCustomStringVariable("parca.debuginfod_urls",
							   "debuginfod servers the symbolizer asks for missing debug information.",
							   "http or https URLs separated by spaces, as DEBUGINFOD_URLS; empty: none.",
							   &debuginfod_urls, "",
							   PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.debuginfod_timeout",
							"Longest a debuginfod transfer may take.",
							NULL,
							&debuginfod_timeout_ms, 60000, 100, 3600 * 1000,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.debuginfod_retry",
							"How long a build id that no debuginfod server had is not asked for again.",
							NULL,
							&debuginfod_retry_s, 3600, 1, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("parca.debuginfod_cache_size",
							"Most bytes of debug information kept from debuginfod servers.",
							"Beyond it the oldest fetched files are deleted; uploaded ones are kept.",
							&debuginfod_cache_kb, 1024 * 1024, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
}

bool
debuginfod_enabled(void)
{
	return debuginfod_urls != NULL && strspn(debuginfod_urls, " \t\n\r") < strlen(debuginfod_urls);
}

List *
debuginfod_wanted(MemoryContext cxt)
{
	Oid			argtypes[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(debuginfod_retry_s)};
	int			rc;

	rc = SPI_execute_with_args(
							   "SELECT DISTINCT m.build_id FROM parca.mappings m "
							   "WHERE m.build_id OPERATOR(pg_catalog.~) '^[0-9a-fA-F]+$' "
							   "AND pg_catalog.length(m.build_id) OPERATOR(pg_catalog.<=) 1024 "
							   "AND EXISTS (SELECT FROM parca.locations l WHERE l.mapping_id OPERATOR(pg_catalog.=) m.id "
							   " AND pg_catalog.cardinality(l.function_ids) OPERATOR(pg_catalog.=) 0 "
							   " AND l.address OPERATOR(pg_catalog.<>) 0) "
							   "AND NOT EXISTS (SELECT FROM parca.debuginfo d WHERE d.build_id OPERATOR(pg_catalog.=) m.build_id) "
							   "AND NOT EXISTS (SELECT FROM parca.debuginfo_missing x WHERE x.build_id OPERATOR(pg_catalog.=) m.build_id "
							   " AND x.checked_at OPERATOR(pg_catalog.>) (pg_catalog.now() OPERATOR(pg_catalog.-) "
							   "     pg_catalog.make_interval(secs => $1))) "
							   "LIMIT " CppAsString2(BUILD_IDS_PER_PASS),
							   1, argtypes, args, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not look for build ids without debug information: %s",
			 SPI_result_code_string(rc));
	return symbolize_first_column(cxt);
}

typedef struct Download
{
	char	   *data;			/* a bytea under construction */
	Size		len;			/* bytes after the header */
	Size		cap;
	Size		limit;
	bool		too_large;
} Download;

/* libcurl's write callback: no ereport here (no longjmp through libcurl). */
static size_t
write_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
	Download   *d = arg;
	size_t		n = size * nmemb;

	if (n > d->limit - d->len)
	{
		d->too_large = true;
		return 0;
	}
	if (d->len + n > d->cap)
	{
		Size		cap = Max(d->cap * 2, d->len + n);
		char	   *grown;

		cap = Min(cap, d->limit);
		grown = d->data
			? repalloc_extended(d->data, VARHDRSZ + cap, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM)
			: palloc_extended(VARHDRSZ + cap, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
		if (grown == NULL)
			return 0;
		d->data = grown;
		d->cap = cap;
	}
	memcpy(d->data + VARHDRSZ + d->len, ptr, n);
	d->len += n;
	return n;
}

/* A transfer stops when the worker is asked to stop. */
static int
check_interrupts(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	return InterruptPending ? 1 : 0;
}

/* One server: the file, or NULL with error set ("" for a plain 404). */
static bytea *
fetch_one(const char *base, const char *build_id, char *error, size_t errlen)
{
	CURL	   *c = curl_easy_init();
	char	   *url;
	char		curl_error[CURL_ERROR_SIZE] = "";
	Download	d = {0};
	CURLcode	rc;
	long		status = 0;
	size_t		baselen = strlen(base);

	if (c == NULL)
	{
		snprintf(error, errlen, "libcurl could not start a transfer");
		return NULL;
	}
	while (baselen > 0 && base[baselen - 1] == '/')
		baselen--;
	url = psprintf("%.*s/buildid/%s/debuginfo", (int) baselen, base, build_id);
	for (char *p = url + baselen; *p; p++)
		*p = pg_tolower((unsigned char) *p);
	d.limit = (Size) symbolize_max_debuginfo_size;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) debuginfod_timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long) Min(debuginfod_timeout_ms, 10000));
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) d.limit);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, check_interrupts);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "parca-postgresql symbolizer");
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	CHECK_FOR_INTERRUPTS();

	if (d.too_large || rc == CURLE_FILESIZE_EXCEEDED)
		snprintf(error, errlen, "%s: larger than parca.max_debuginfo_size (%d bytes)",
				 url, symbolize_max_debuginfo_size);
	else if (rc != CURLE_OK)
		snprintf(error, errlen, "%s: %s", url, curl_error[0] ? curl_error : curl_easy_strerror(rc));
	else if (status == 404)
		error[0] = '\0';
	else if (status != 200)
		snprintf(error, errlen, "%s: HTTP status %ld", url, status);
	else if (d.data == NULL)
		snprintf(error, errlen, "%s: empty response", url);
	else
	{
		SET_VARSIZE(d.data, VARHDRSZ + d.len);
		return (bytea *) d.data;
	}
	if (d.data)
		pfree(d.data);
	return NULL;
}

bytea *
debuginfod_fetch(const char *build_id, char *error, size_t errlen)
{
	static bool curl_ready = false;
	char	   *urls = pstrdup(debuginfod_urls);
	char	   *save = NULL;
	char		last[512] = "";

	if (!curl_ready)
	{
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		{
			snprintf(error, errlen, "libcurl could not be initialized");
			return NULL;
		}
		curl_ready = true;
	}
	for (char *url = strtok_r(urls, " \t\r\n", &save); url; url = strtok_r(NULL, " \t\r\n", &save))
	{
		bytea	   *elf;

		if (pg_strncasecmp(url, "http://", 7) != 0 && pg_strncasecmp(url, "https://", 8) != 0)
		{
			snprintf(last, sizeof(last), "%s: only http and https URLs are fetched", url);
			continue;
		}
		if ((elf = fetch_one(url, build_id, last, sizeof(last))) != NULL)
			return elf;
	}
	if (last[0] == '\0')
		snprintf(last, sizeof(last), "not found");
	strlcpy(error, last, errlen);
	return NULL;
}

void
debuginfod_note_missing(const char *build_id, const char *error)
{
	Oid			argtypes[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(build_id), CStringGetTextDatum(error)};
	int			rc;

	rc = SPI_execute_with_args("INSERT INTO parca.debuginfo_missing AS x (build_id, error) VALUES ($1, $2) "
							   "ON CONFLICT (build_id) DO UPDATE SET checked_at = pg_catalog.now(), error = excluded.error",
							   2, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "could not update parca.debuginfo_missing: %s", SPI_result_code_string(rc));
}

void
debuginfod_trim_cache(void)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		args[1] = {Int64GetDatum((int64) debuginfod_cache_kb * 1024)};
	int			rc;

	rc = SPI_execute_with_args("DELETE FROM parca.debuginfo WHERE build_id OPERATOR(pg_catalog.=) ANY (ARRAY("
							   " SELECT t.build_id FROM (SELECT build_id, pg_catalog.sum(pg_catalog.octet_length(elf)) "
							   "  OVER (ORDER BY stored_at DESC, build_id) AS total "
							   "  FROM parca.debuginfo WHERE source OPERATOR(pg_catalog.=) 'debuginfod') t "
							   " WHERE t.total OPERATOR(pg_catalog.>) $1))",
							   1, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "could not trim the debuginfod cache: %s", SPI_result_code_string(rc));
}
