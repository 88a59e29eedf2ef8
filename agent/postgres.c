/*
 * postgres.c
 *		PostgreSQL backends and their labels; see postgres.h.
 *
 * A PostgreSQL server is recognized by the symbols its executable exports
 * in .dynsym: MyBEEntry (the backend's PgBackendStatus *),
 * my_wait_event_info (uint32 *) and MyProc (PGPROC *).  The offsets of the
 * fields read come from one of two places:
 *	- the extension's parca_postgres_layout() on the cluster the agent
 *	  writes to, compiled against that server's own headers: used for every
 *	  process of the same executable (its build id), whichever cluster it
 *	  serves;
 *	- else the table below, one layout per major version (taken from the
 *	  headers of the release; the version is read from the executable's
 *	  path, /usr/lib/postgresql/15/bin or /usr/pgsql-15/bin): a table and
 *	  not the headers themselves, because the agent builds without
 *	  PostgreSQL's server headers, and one binary must read servers of
 *	  several versions.  test/postgres checks the row of 15 against the
 *	  extension's function.
 * Either way the layout is checked on each process before its samples are
 * read (check_backend): st_procpid at MyBEEntry must be the process's pid
 * in its own pid namespace, st_backendType and st_state within their
 * enums; the BPF program checks st_procpid again at every sample.  A
 * process that fails gets no labels.
 *
 * Names of databases and roles are known for the cluster the agent writes
 * to (a backend whose working directory, which PostgreSQL sets to its data
 * directory, is that cluster's), read on the agent's own short connection
 * at start and again, at most every NAMES_REFRESH_NS, when an oid is not
 * known; elsewhere the oid is the label's value.  Wait events are named as
 * that cluster's parca_postgres_wait_events() names them for processes of
 * its executable, else "Class:number".
 */
#include "postgres.h"

#include <errno.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids/ids.h"
#include "util.h"

/* The offsets read, and the names of the server's BackendType values. */
typedef struct PgLayout
{
	int			major;			/* server major version */
	char		build_id[128];	/* the executable's, "" for a table row */
	uint32_t	st_procpid;
	uint32_t	st_backend_type;
	uint32_t	st_databaseid;
	uint32_t	st_userid;
	uint32_t	st_state;
	uint32_t	st_query_id;
	uint32_t	proc_lock_group_leader;
	int			nbackend_types;
	const char *backend_types[32];	/* by BackendType value */
} PgLayout;

/* BackendState's last value, STATE_DISABLED */
#define PG_STATE_MAX 6

/* x86-64, from each release's utils/backend_status.h, storage/proc.h, miscadmin.h. */
static const PgLayout known_layouts[] = {
	{15, "", 4, 8, 48, 52, 232, 424, 840, 13,
		{"not initialized", "autovacuum launcher", "autovacuum worker", "client backend",
			"background worker", "background writer", "checkpointer", "startup",
			"walreceiver", "walsender", "walwriter", "archiver", "logger"}},
};

/* What the agent keeps per process in Process.postgres (see process.h). */
struct ProcessPostgres
{
	bool		done;			/* registered, refused, or not PostgreSQL */
	uint64_t	retry_ns;		/* no status yet: look again then */
};

/*
 * A backend registered with the BPF program, by pid.  Kept apart from its
 * Process, which the agent forgets while the backend is idle (not sampled
 * for a flush interval) while the BPF program keeps reading it.
 */
typedef struct Backend
{
	uint64_t	start_time;
	const PgLayout *layout;
	bool		named;			/* of the cluster whose names are known */
} Backend;

static U64Map backends;			/* pid -> Backend */
static uint64_t backends_swept_ns;

/* How often backends that exited are forgotten. */
#define BACKENDS_SWEEP_NS 60000000000ull

/* The extension's layout, from the cluster the agent writes to. */
static PgLayout server_layout;
static bool have_server_layout;
static char *server_data_directory;
static bool enabled;			/* postgres_init was called */
static const char *test_override;	/* PARCA_AGENT_TEST_PG_LAYOUT */
static PgLayout known_overridden[sizeof(known_layouts) / sizeof(known_layouts[0])];

/* wait_event_info -> "Type:Name", of the executable server_layout is of */
static U64Map wait_event_names;

/* oid -> name of that cluster's databases and roles */
static U64Map database_names;
static U64Map user_names;
static const char *names_dsn;
static uint64_t names_read_ns;

#define NAMES_REFRESH_NS 10000000000ull

/*
 * hash(dev, ino) -> (void *) 1: executables found not to be PostgreSQL
 * servers, or servers of no known layout (logged once).
 */
static U64Map not_postgres;

static PGconn *
connect_names(void)
{
	const char *keys[4] = {"connect_timeout", "fallback_application_name", NULL, NULL};
	/* (short: a refresh of names holds up the sampling loop) */
	const char *values[4] = {"2", "parca-agent", NULL, NULL};
	PGconn	   *conn;

	if (names_dsn && names_dsn[0])
	{
		keys[2] = "dbname";
		values[2] = names_dsn;
	}
	conn = PQconnectdbParams(keys, values, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		log_msg(LOG_WARN, "PostgreSQL labels: cannot connect to read layout and names: %s",
				PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

static void
clear_names(U64Map *m)
{
	size_t		pos = 0;
	uint64_t	key;
	void	   *value;

	while (u64map_next(m, &pos, &key, &value))
		free(value);
	u64map_clear(m);
}

/* The (oid or number, name) rows of sql into into, unless it fails. */
static void
read_names(PGconn *conn, const char *sql, U64Map *into)
{
	PGresult   *r = PQexec(conn, sql);

	if (PQresultStatus(r) == PGRES_TUPLES_OK)
	{
		clear_names(into);
		for (int i = 0; i < PQntuples(r); i++)
			u64map_put(into, strtoull(PQgetvalue(r, i, 0), NULL, 10),
					   xstrdup(PQgetvalue(r, i, 1)));
	}
	PQclear(r);
}

static void
refresh_names(PGconn *conn)
{
	bool		own = conn == NULL;

	if (own && (conn = connect_names()) == NULL)
		return;
	read_names(conn, "SELECT oid, datname FROM pg_catalog.pg_database", &database_names);
	read_names(conn, "SELECT oid, rolname FROM pg_catalog.pg_roles", &user_names);
	names_read_ns = now_monotonic_ns();
	if (own)
		PQfinish(conn);
}

/* Apply PARCA_AGENT_TEST_PG_LAYOUT's "field=offset,..." to l. */
static void
apply_test_override(PgLayout *l)
{
	const char *p = test_override;

	while (p && *p)
	{
		char		name[64];
		unsigned	offset;
		int			used = 0;

		if (sscanf(p, "%63[a-z_]=%u%n", name, &offset, &used) != 2)
			break;
		if (strcmp(name, "st_procpid") == 0)
			l->st_procpid = offset;
		else if (strcmp(name, "st_backend_type") == 0)
			l->st_backend_type = offset;
		else if (strcmp(name, "st_state") == 0)
			l->st_state = offset;
		else if (strcmp(name, "st_query_id") == 0)
			l->st_query_id = offset;
		p += used;
		if (*p == ',')
			p++;
	}
}

/* The extension's parca_postgres_layout(), if the cluster has it. */
static void
read_server_layout(PGconn *conn)
{
	PGresult   *r = PQexec(conn,
						   "SELECT server_version_num / 10000, build_id, data_directory, "
						   "st_procpid, st_backend_type, st_databaseid, st_userid, st_state, "
						   "st_query_id, proc_lock_group_leader, "
						   "pg_catalog.array_to_string(backend_types, chr(1)) "
						   "FROM parca_postgres_layout()");
	PgLayout   *l = &server_layout;
	char	   *types;

	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
	{
		log_msg(LOG_INFO, "PostgreSQL labels: %s has no parca_postgres_layout() "
				"(extension older than 0.2?): the agent's own layouts only: %s",
				PQdb(conn), PQerrorMessage(conn));
		PQclear(r);
		return;
	}
	l->major = atoi(PQgetvalue(r, 0, 0));
	snprintf(l->build_id, sizeof(l->build_id), "%s", PQgetvalue(r, 0, 1));
	server_data_directory = xstrdup(PQgetvalue(r, 0, 2));
	l->st_procpid = (uint32_t) atoi(PQgetvalue(r, 0, 3));
	l->st_backend_type = (uint32_t) atoi(PQgetvalue(r, 0, 4));
	l->st_databaseid = (uint32_t) atoi(PQgetvalue(r, 0, 5));
	l->st_userid = (uint32_t) atoi(PQgetvalue(r, 0, 6));
	l->st_state = (uint32_t) atoi(PQgetvalue(r, 0, 7));
	l->st_query_id = (uint32_t) atoi(PQgetvalue(r, 0, 8));
	l->proc_lock_group_leader = (uint32_t) atoi(PQgetvalue(r, 0, 9));
	types = xstrdup(PQgetvalue(r, 0, 10));
	for (char *t = types, *next; t && l->nbackend_types < 32; t = next)
	{
		next = strchr(t, 1);
		if (next)
			*next++ = '\0';
		l->backend_types[l->nbackend_types++] = t;
	}
	apply_test_override(l);
	have_server_layout = true;
	read_names(conn, "SELECT wait_event_info, wait_event_type || ':' || wait_event "
			   "FROM parca_postgres_wait_events()", &wait_event_names);
	log_msg(LOG_INFO, "PostgreSQL labels: layout of PostgreSQL %d (build id %s) from %s's "
			"parca_postgres_layout()", l->major, l->build_id, PQdb(conn));
	PQclear(r);
}

void
postgres_init(const char *dsn, bool offline)
{
	PGconn	   *conn;

	enabled = true;
	test_override = getenv("PARCA_AGENT_TEST_PG_LAYOUT");
	for (size_t i = 0; i < sizeof(known_layouts) / sizeof(known_layouts[0]); i++)
	{
		known_overridden[i] = known_layouts[i];
		apply_test_override(&known_overridden[i]);
	}
	if (test_override)
		log_msg(LOG_WARN, "PARCA_AGENT_TEST_PG_LAYOUT=%s: PostgreSQL layouts changed (tests only)",
				test_override);
	if (offline)
		return;
	names_dsn = dsn;
	if ((conn = connect_names()) == NULL)
		return;
	read_server_layout(conn);
	if (server_data_directory)
		refresh_names(conn);
	PQfinish(conn);
}

/* "15" from .../postgresql/15/bin/postgres or /usr/pgsql-15/bin/postgres; 0 if none. */
static int
major_from_path(const char *path)
{
	const char *v;
	int			major = 0;

	if ((v = strstr(path, "/postgresql/")) != NULL)
		sscanf(v + 12, "%d/", &major);
	else if ((v = strstr(path, "/pgsql-")) != NULL)
		sscanf(v + 7, "%d/", &major);
	return major;
}

static const PgLayout *
find_layout(const char *build_id, const char *path)
{
	int			major;

	if (have_server_layout && build_id[0] && strcmp(build_id, server_layout.build_id) == 0)
		return &server_layout;
	major = major_from_path(path);
	for (size_t i = 0; i < sizeof(known_layouts) / sizeof(known_layouts[0]); i++)
		if (known_overridden[i].major == major)
			return &known_overridden[i];
	return NULL;
}

/* The pid the process knows itself by: the last of its NSpid; 0 if unknown. */
static uint32_t
namespace_pid(uint32_t pid)
{
	char		path[64];
	char	   *text;
	uint32_t	ns_pid;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return 0;
	ns_pid = status_namespace_pid(text);
	free(text);
	return ns_pid;
}

/* Does the process serve the cluster whose names the agent read? */
static bool
of_named_cluster(uint32_t pid)
{
	char		link[64];
	char		cwd[4096];
	ssize_t		n;

	if (server_data_directory == NULL)
		return false;
	snprintf(link, sizeof(link), "/proc/%u/cwd", pid);
	n = readlink(link, cwd, sizeof(cwd) - 1);
	if (n <= 0)
		return false;
	cwd[n] = '\0';
	return strcmp(cwd, server_data_directory) == 0;
}

typedef enum
{
	CHECK_OK, CHECK_NOT_YET, CHECK_REFUSED
} CheckResult;

/* Most bytes of a PgBackendStatus read to check it. */
#define PG_STATUS_PREFIX 1024

/*
 * Check the layout on the process: its backend status exists and is in
 * use (else not yet) and looks like its own.  The entry is copied as its
 * readers in the server copy it: st_changecount (the first field) even
 * and the same before and after, else it is being written (not yet).
 */
static CheckResult
check_backend(Process *p, const PgLayout *l, const struct postgres_process *reg,
			  char *why, size_t whylen)
{
	uint64_t	entry = 0;
	uint64_t	wait_ptr = 0;
	unsigned char status[PG_STATUS_PREFIX];
	size_t		len = l->st_query_id + sizeof(uint64_t);
	int32_t		before;
	int32_t		after;
	int32_t		procpid;
	uint32_t	backend_type;
	uint32_t	state;

	if (len > sizeof(status) || l->st_procpid + 4 > len || l->st_backend_type + 4 > len ||
		l->st_state + 4 > len || l->st_databaseid + 4 > len || l->st_userid + 4 > len)
	{
		snprintf(why, whylen, "offsets beyond %d bytes", PG_STATUS_PREFIX);
		return CHECK_REFUSED;
	}
	/* (unreadable: the process has exited, or is exiting) */
	if (!read_remote(p->pid, reg->my_be_entry, &entry, sizeof(entry)) ||
		!read_remote(p->pid, reg->my_wait_event_info, &wait_ptr, sizeof(wait_ptr)) ||
		entry == 0)
		return CHECK_NOT_YET;
	if (!read_remote(p->pid, entry, &before, sizeof(before)) ||
		!read_remote(p->pid, entry, status, len) ||
		!read_remote(p->pid, entry, &after, sizeof(after)) ||
		before != after || (before & 1) != 0)
		return CHECK_NOT_YET;
	memcpy(&procpid, status + l->st_procpid, sizeof(procpid));
	memcpy(&backend_type, status + l->st_backend_type, sizeof(backend_type));
	memcpy(&state, status + l->st_state, sizeof(state));
	/* (a backend starting or exiting: no pid, or B_INVALID, "not initialized") */
	if (procpid == 0 || backend_type == 0)
		return CHECK_NOT_YET;
	if (procpid < 0 || (uint32_t) procpid != reg->ns_pid)
		snprintf(why, whylen, "st_procpid %d is not its pid %u", procpid, reg->ns_pid);
	else if (backend_type >= (uint32_t) l->nbackend_types)
		snprintf(why, whylen, "st_backendType %u is not a backend type", backend_type);
	else if (state > PG_STATE_MAX)
		snprintf(why, whylen, "st_state %u is not a backend state", state);
	else if (wait_ptr == 0)
		snprintf(why, whylen, "my_wait_event_info is NULL");
	else
		return CHECK_OK;
	return CHECK_REFUSED;
}

/* Was the backend found gone (start time cleared)? */
static bool
backend_gone(void *value, void *arg)
{
	return ((Backend *) value)->start_time == 0;
}

static void
free_backend(void *value, void *arg)
{
	free(value);
}

/*
 * Remember the backend; every BACKENDS_SWEEP_NS forget those whose pid no
 * longer exists (kill(pid, 0)), so that the map follows the machine's
 * backends, not its history.
 */
static void
register_backend(const Process *p, const PgLayout *l)
{
	Backend    *b = xcalloc(1, sizeof(Backend));
	uint64_t	now = now_monotonic_ns();

	b->start_time = p->start_time;
	b->layout = l;
	b->named = of_named_cluster(p->pid);
	free(u64map_put(&backends, p->pid, b));
	if (now - backends_swept_ns >= BACKENDS_SWEEP_NS)
	{
		size_t		pos = 0;
		uint64_t	pid;
		void	   *value;

		backends_swept_ns = now;
		while (u64map_next(&backends, &pos, &pid, &value))
			if (kill((pid_t) pid, 0) != 0 && errno == ESRCH)
				((Backend *) value)->start_time = 0;
		u64map_remove_if(&backends, backend_gone, free_backend, NULL);
	}
}

void
postgres_check(Sampler *sampler, Process *p, const ExecMapping *m)
{
	struct ProcessPostgres *pg;
	ObjFile    *f;
	uint64_t	file_key[2] = {m->dev, m->ino};
	uint64_t	key;
	uint64_t	be_entry, wait_event, my_proc, size, vaddr;
	struct postgres_process reg = {0};
	const PgLayout *l;
	char		why[128];
	uint64_t	now;

	if (!enabled || m->ino != p->exe_ino)
		return;
	if (p->postgres == NULL)
		p->postgres = xcalloc(1, sizeof(struct ProcessPostgres));
	pg = p->postgres;
	if (pg->done || (now = now_monotonic_ns()) < pg->retry_ns)
		return;
	key = parca_hash64(file_key, sizeof(file_key));
	if (u64map_get(&not_postgres, key) != NULL)
	{
		pg->done = true;
		return;
	}
	if ((f = process_objfile(p, m)) == NULL ||
		!objfile_dynamic_symbol(f, "MyBEEntry", &be_entry, &size) ||
		!objfile_dynamic_symbol(f, "my_wait_event_info", &wait_event, &size) ||
		!objfile_dynamic_symbol(f, "MyProc", &my_proc, &size) ||
		!objfile_vaddr(f, m->pgoff, &vaddr))
	{
		if (f != NULL && objfile_is_open(f))
		{
			u64map_put(&not_postgres, key, (void *) 1);
			pg->done = true;
		}
		return;
	}
	if ((l = find_layout(objfile_build_id(f), m->file)) == NULL)
	{
		log_msg(LOG_INFO, "pid %u (%s): PostgreSQL server %s of no known layout (build id %s; "
				"the agent knows PostgreSQL 15, and the layout of the cluster it writes "
				"to): no PostgreSQL labels", p->pid, p->comm, m->file, objfile_build_id(f));
		u64map_put(&not_postgres, key, (void *) 1);
		pg->done = true;
		return;
	}
	/* the mapping's start is the file offset pgoff's address */
	reg.start_time = p->start_time;
	reg.my_be_entry = be_entry - vaddr + m->start;
	reg.my_wait_event_info = wait_event - vaddr + m->start;
	reg.my_proc = my_proc - vaddr + m->start;
	reg.ns_pid = namespace_pid(p->pid);
	reg.st_procpid = l->st_procpid;
	reg.st_backend_type = l->st_backend_type;
	reg.st_databaseid = l->st_databaseid;
	reg.st_userid = l->st_userid;
	reg.st_state = l->st_state;
	reg.st_query_id = l->st_query_id;
	reg.proc_lock_group_leader = l->proc_lock_group_leader;
	switch (check_backend(p, l, &reg, why, sizeof(why)))
	{
		case CHECK_NOT_YET:
			/* the postmaster, or a backend starting: no status yet */
			pg->retry_ns = now + 1000000000ull;
			return;
		case CHECK_REFUSED:
			log_msg(LOG_WARN, "pid %u (%s): PostgreSQL %d layout refused (%s): "
					"no PostgreSQL labels", p->pid, p->comm, l->major, why);
			pg->done = true;
			return;
		case CHECK_OK:
			break;
	}
	pg->done = true;
	register_backend(p, l);
	sampler_add_postgres_process(sampler, p->pid, &reg);
	log_msg(LOG_DEBUG, "pid %u (%s): PostgreSQL %d backend, labelled", p->pid, p->comm,
			l->major);
}

/* The name of oid in names, read again if it is missing; else the oid. */
static const char *
oid_name(const Backend *b, U64Map *names, uint32_t oid, char *buf, size_t len)
{
	const char *name;

	if (oid == 0)
		return "";
	if (b->named)
	{
		if ((name = u64map_get(names, oid)) == NULL &&
			now_monotonic_ns() - names_read_ns >= NAMES_REFRESH_NS)
		{
			refresh_names(NULL);
			name = u64map_get(names, oid);
		}
		if (name != NULL)
			return name;
	}
	snprintf(buf, len, "%u", oid);
	return buf;
}

/* The class of a wait event (the top byte of wait_event_info, PG 9.6 on). */
static const char *
wait_event_class(uint32_t info)
{
	static const char *const classes[] = {
		NULL, "LWLock", NULL, "Lock", "BufferPin", "Activity", "Client",
		"Extension", "IPC", "Timeout", "IO"
	};
	uint32_t	c = info >> 24;

	return c < sizeof(classes) / sizeof(classes[0]) && classes[c] ? classes[c] : "Unknown";
}

void
postgres_labels(LabelSet *set, const struct parca_sample *s, PgLabelText *text)
{
	const Backend *b;
	const PgLayout *l;
	bool		worker = (s->pg_flags & PG_FLAG_PARALLEL_WORKER) != 0;

	if (s->pg_end != PG_END_READ || (b = u64map_get(&backends, s->pid)) == NULL ||
		b->start_time != s->start_time)
		return;
	l = b->layout;
	if (s->pg_backend_type < (uint32_t) l->nbackend_types)
		labelset_add(set, "pg_backend_type", l->backend_types[s->pg_backend_type]);
	else
	{
		snprintf(text->backend_type, sizeof(text->backend_type), "%u", s->pg_backend_type);
		labelset_add(set, "pg_backend_type", text->backend_type);
	}
	labelset_add(set, "pg_database", oid_name(b, &database_names, s->pg_database,
											  text->database, sizeof(text->database)));
	labelset_add(set, "pg_user", oid_name(b, &user_names, s->pg_user,
										  text->user, sizeof(text->user)));
	/* query ids on client backends and their parallel workers only: bounded series */
	if ((s->pg_flags & PG_FLAG_ACTIVE) && s->pg_query_id != 0 &&
		(worker || (s->pg_backend_type < (uint32_t) l->nbackend_types &&
					strcmp(l->backend_types[s->pg_backend_type], "client backend") == 0)))
	{
		/* pg_stat_statements' queryid is a signed bigint */
		snprintf(text->query_id, sizeof(text->query_id), "%lld",
				 (long long) (int64_t) s->pg_query_id);
		labelset_add(set, "pg_query_id", text->query_id);
	}
	if (worker)
		labelset_add(set, "pg_parallel_worker", "true");
	if (s->kind == SAMPLE_OFF_CPU && s->pg_wait_event != 0)
	{
		const char *name = l == &server_layout ?
			u64map_get(&wait_event_names, s->pg_wait_event) : NULL;

		if (name == NULL)
		{
			snprintf(text->wait_event, sizeof(text->wait_event), "%s:%u",
					 wait_event_class(s->pg_wait_event), s->pg_wait_event & 0xffff);
			name = text->wait_event;
		}
		labelset_add(set, "pg_wait_event", name);
	}
}

void
postgres_free(struct ProcessPostgres *pg)
{
	free(pg);
}
