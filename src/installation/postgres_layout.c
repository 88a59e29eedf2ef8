/*
 * postgres_layout.c
 *		parca_postgres_layout(): the layout of this server's backend status,
 *		as this library was compiled against the server's own headers, for
 *		parca-agent to read the backends of the same executable (matched by
 *		build id) at sample time.  See docs/postgres.md.
 *
 * The library is built against the headers of the major version it is
 * loaded into (PostgreSQL refuses a library of another major version), and
 * minor releases do not change these structures, so offsetof() here is
 * the running server's layout.  parca_postgres_wait_events() lists the
 * names of the wait events this server knows, by wait_event_info, so that
 * the agent can name the wait events it reads.
 */
#include "postgres.h"

#include <link.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "storage/proc.h"
#include "utils/array.h"
#include "utils/backend_status.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/wait_event.h"

PG_FUNCTION_INFO_V1(parca_postgres_layout);
PG_FUNCTION_INFO_V1(parca_postgres_wait_events);

/* BackendType's values: B_LOGGER is the last in PostgreSQL 15. */
#define BACKEND_TYPES (B_LOGGER + 1)

/* The GNU build id of the main program (the postgres executable), in hex. */
typedef struct BuildIdSearch
{
	char		hex[2 * 64 + 1];
} BuildIdSearch;

/* dl_iterate_phdr callback: the first object is the main program. */
static int
main_program_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	BuildIdSearch *search = arg;

	for (int i = 0; i < info->dlpi_phnum; i++)
	{
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *note;
		const char *end;

		if (ph->p_type != PT_NOTE)
			continue;
		note = (const char *) (info->dlpi_addr + ph->p_vaddr);
		end = note + ph->p_memsz;
		while (note + sizeof(ElfW(Nhdr)) <= end)
		{
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *) note;
			const unsigned char *desc = (const unsigned char *) note + sizeof(ElfW(Nhdr)) +
				TYPEALIGN(4, nh->n_namesz);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				memcmp(note + sizeof(ElfW(Nhdr)), "GNU", 4) == 0 &&
				nh->n_descsz <= 64 && (const char *) desc + nh->n_descsz <= end)
			{
				for (uint32 k = 0; k < nh->n_descsz; k++)
					snprintf(search->hex + 2 * k, 3, "%02x", desc[k]);
				return 1;
			}
			note = (const char *) desc + TYPEALIGN(4, nh->n_descsz);
		}
	}
	return 1;					/* only the main program */
}

Datum
parca_postgres_layout(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[13];
	bool		nulls[13] = {0};
	Datum		types[BACKEND_TYPES];
	BuildIdSearch search = {{0}};
	int			i = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("parca_postgres_layout must be called where a row is expected")));
	desc = BlessTupleDesc(desc);
	dl_iterate_phdr(main_program_build_id, &search);
	for (int t = 0; t < BACKEND_TYPES; t++)
		types[t] = CStringGetTextDatum(GetBackendTypeDesc((BackendType) t));

	values[i++] = Int32GetDatum(PG_VERSION_NUM);
	values[i++] = CStringGetTextDatum(search.hex);
	values[i++] = CStringGetTextDatum(DataDir);
	values[i++] = Int32GetDatum(PostmasterPid);
	values[i++] = Int32GetDatum(offsetof(PgBackendStatus, st_procpid));
	values[i++] = Int32GetDatum(offsetof(PgBackendStatus, st_backendType));
	values[i++] = Int32GetDatum(offsetof(PgBackendStatus, st_databaseid));
	values[i++] = Int32GetDatum(offsetof(PgBackendStatus, st_userid));
	values[i++] = Int32GetDatum(offsetof(PgBackendStatus, st_state));
	values[i++] = Int32GetDatum(offsetof(PgBackendStatus, st_query_id));
	values[i++] = Int32GetDatum(sizeof(PgBackendStatus));
	values[i++] = Int32GetDatum(offsetof(PGPROC, lockGroupLeader));
	values[i++] = PointerGetDatum(construct_array(types, BACKEND_TYPES, TEXTOID, -1,
												  false, TYPALIGN_INT));
	Assert(i == lengthof(values));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/* Most events tried in a class whose events are one enum from 0. */
#define MAX_EVENTS_IN_CLASS 1024

static void
add_wait_event(ReturnSetInfo *rsinfo, uint32 info)
{
	Datum		values[3];
	bool		nulls[3] = {0};
	const char *type = pgstat_get_wait_event_type(info);

	values[0] = Int64GetDatum((int64) info);
	values[1] = CStringGetTextDatum(type ? type : "???");
	values[2] = CStringGetTextDatum(pgstat_get_wait_event(info));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * Every wait event of this server: the lightweight lock tranches built in,
 * the lock tag types, and the events of each other class, which are an
 * enum from the class's first value on (wait_event.h) until the server
 * calls one "unknown wait event".
 */
Datum
parca_postgres_wait_events(PG_FUNCTION_ARGS)
{
	static const uint32 enum_classes[] = {
		PG_WAIT_BUFFER_PIN, PG_WAIT_ACTIVITY, PG_WAIT_CLIENT, PG_WAIT_EXTENSION,
		PG_WAIT_IPC, PG_WAIT_TIMEOUT, PG_WAIT_IO
	};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (uint32 e = 0; e < LWTRANCHE_FIRST_USER_DEFINED; e++)
		add_wait_event(rsinfo, PG_WAIT_LWLOCK | e);
	for (uint32 e = 0; e <= LOCKTAG_LAST_TYPE; e++)
		add_wait_event(rsinfo, PG_WAIT_LOCK | e);
	for (int c = 0; c < lengthof(enum_classes); c++)
	{
		for (uint32 e = 0; e < MAX_EVENTS_IN_CLASS; e++)
		{
			uint32		info = enum_classes[c] | e;

			/* BufferPin and Extension have one event each, named whatever e is */
			if ((e > 0 && (enum_classes[c] == PG_WAIT_BUFFER_PIN ||
						   enum_classes[c] == PG_WAIT_EXTENSION)) ||
				strcmp(pgstat_get_wait_event(info), "unknown wait event") == 0)
				break;
			add_wait_event(rsinfo, info);
		}
	}
	return (Datum) 0;
}
