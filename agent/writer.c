/*
 * writer.c
 *		The PostgreSQL writer; see writer.h.
 */
#include "writer.h"

#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ids/ids.h"
#include "util.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

/* Microseconds between the Unix epoch and PostgreSQL's (2000-01-01). */
#define PG_EPOCH_OFFSET_US INT64_C(946684800000000)

static WriterConfig cfg;
static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static Batch *queue_head;
static Batch *queue_tail;
static Batch *in_flight;		/* the head, while being written */
static Batch *committed;
static Batch *returned;			/* to be completed after a metastore collection */
static Batch *returned_tail;
static int64_t returned_generation;
static bool stopping;
static uint64_t drain_deadline_ns;
static WriterStats stats;
static PGconn *conn;

/* A queued debug information upload. */
typedef struct Upload
{
	struct Upload *next;
	int			fd;
	char		build_id[];
} Upload;

static Upload *uploads;			/* newest first */
static int	nuploads;

static int64_t
batch_values(const Batch *b)
{
	int64_t		sum = 0;

	for (int i = 0; i < b->nsamples; i++)
		sum += b->values[i];
	return sum;
}

bool
writer_upload(const char *build_id, int fd)
{
	Upload	   *u;

	pthread_mutex_lock(&lock);
	if (nuploads >= WRITER_MAX_UPLOADS)
	{
		pthread_mutex_unlock(&lock);
		close(fd);
		return false;
	}
	u = xmalloc(sizeof(Upload) + strlen(build_id) + 1);
	strcpy(u->build_id, build_id);
	u->fd = fd;
	u->next = uploads;
	uploads = u;
	nuploads++;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	return true;
}

void
writer_submit(Batch *b)
{
	uint64_t	dropped = 0;
	int64_t		dropped_values = 0;

	pthread_mutex_lock(&lock);
	b->next = NULL;
	if (queue_tail)
		queue_tail->next = b;
	else
		queue_head = b;
	queue_tail = b;
	stats.backlog_bytes += b->bytes;
	stats.backlog_batches++;

	/* Over the bound: drop the oldest batches not being written. */
	while (stats.backlog_bytes > cfg.max_bytes && stats.backlog_batches > 1)
	{
		Batch	  **link = &queue_head;
		Batch	   *victim;

		if (*link == in_flight)
			link = &(*link)->next;
		victim = *link;
		if (victim == NULL || victim == b)
			break;
		*link = victim->next;
		if (queue_tail == victim)
			queue_tail = NULL;	/* cannot happen: b is after it */
		stats.backlog_bytes -= victim->bytes;
		stats.backlog_batches--;
		stats.batches_dropped++;
		dropped++;
		dropped_values += batch_values(victim);
		batch_free(victim);
	}
	if (dropped)
	{
		stats.values_dropped += dropped_values;
		log_msg(LOG_WARN, "backlog over %zu bytes: dropped the %" PRIu64
				" oldest batch(es), %" PRId64 " samples (%" PRIu64 " batches, %"
				PRIu64 " samples dropped in all)", cfg.max_bytes, dropped,
				dropped_values, stats.batches_dropped, stats.values_dropped);
	}
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

Batch *
writer_take_committed(void)
{
	Batch	   *list;

	pthread_mutex_lock(&lock);
	list = committed;
	committed = NULL;
	pthread_mutex_unlock(&lock);
	return list;
}

void
writer_stats(WriterStats *out)
{
	pthread_mutex_lock(&lock);
	*out = stats;
	pthread_mutex_unlock(&lock);
}

/* libpq's last error, without its trailing newline. */
static void
log_pq_error(const char *what)
{
	const char *msg = PQerrorMessage(conn);
	int			len = (int) strlen(msg);

	while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == ' '))
		len--;
	log_msg(LOG_WARN, "%s: %.*s", what, len, msg);
}

/*
 * Does the database speak this agent's write protocol (ids.h)?  Checked on
 * every connection: until it does (an agent newer than the extension waits
 * for ALTER EXTENSION parca UPDATE), batches stay in the backlog.
 */
static bool
protocol_matches(void)
{
	PGresult   *r = PQexec(conn, "SELECT parca_write_protocol()");
	bool		ok = false;

	if (PQresultStatus(r) != PGRES_TUPLES_OK)
	{
		const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

		/* 42883: undefined_function, an extension from before the protocol */
		if (state && strcmp(state, "42883") == 0)
			log_msg(LOG_ERROR, "database %s has no parca_write_protocol(): the extension parca "
					"there is older than this agent (write protocol %d); run ALTER EXTENSION "
					"parca UPDATE (after installing the extension of this agent's release)",
					PQdb(conn), PARCA_WRITE_PROTOCOL);
		else
			log_pq_error("cannot check the write protocol");
	}
	else if (PQntuples(r) != 1 || atoi(PQgetvalue(r, 0, 0)) != PARCA_WRITE_PROTOCOL)
		log_msg(LOG_ERROR, "database %s speaks write protocol %s, this agent %d: refusing to "
				"write; install an agent and extension of the same release (then ALTER "
				"EXTENSION parca UPDATE)", PQdb(conn),
				PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "?", PARCA_WRITE_PROTOCOL);
	else
		ok = true;
	PQclear(r);
	return ok;
}

static bool
connect_db(void)
{
	const char *keys[4] = {"connect_timeout", "fallback_application_name", NULL, NULL};
	const char *values[4] = {"10", "parca-agent", NULL, NULL};

	if (conn && PQstatus(conn) == CONNECTION_OK)
		return true;
	if (conn)
		PQfinish(conn);
	/* The DSN comes last so that its settings win. */
	if (cfg.dsn && cfg.dsn[0])
	{
		keys[2] = "dbname";
		values[2] = cfg.dsn;
	}
	conn = PQconnectdbParams(keys, values, 1);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		log_pq_error("cannot connect to PostgreSQL");
		PQfinish(conn);
		conn = NULL;
		return false;
	}
	log_msg(LOG_INFO, "connected to PostgreSQL %s:%s/%s as %s (%s%s)", PQhost(conn),
			PQport(conn), PQdb(conn), PQuser(conn),
			PQsslInUse(conn) ? "SSL " : "no SSL",
			PQsslInUse(conn) ? PQsslAttribute(conn, "protocol") : "");
	if (!protocol_matches())
	{
		PQfinish(conn);
		conn = NULL;
		return false;
	}
	return true;
}

/* Run a statement; on failure log it and return NULL. */
static PGresult *
run(const char *sql, int nparams, const char *const *params, ExecStatusType want)
{
	PGresult   *r = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(r) != want)
	{
		log_pq_error("writing a batch failed");
		PQclear(r);
		return NULL;
	}
	return r;
}

static bool
run_ok(const char *sql, int nparams, const char *const *params)
{
	PGresult   *r = run(sql, nparams, params, PGRES_COMMAND_OK);

	PQclear(r);
	return r != NULL;
}

static bool
run_tuples(const char *sql, int nparams, const char *const *params)
{
	PGresult   *r = run(sql, nparams, params, PGRES_TUPLES_OK);

	PQclear(r);
	return r != NULL;
}

/* The samples as COPY's binary format. */
static void
copy_data(const Batch *b, const int64_t *series_ids, Buf *out)
{
	static const char header[] = "PGCOPY\n\377\r\n";
	int64_t		time_us = (int64_t) (b->time_ns / 1000) - PG_EPOCH_OFFSET_US;

	buf_append(out, header, 11);
	buf_put_be32(out, 0);		/* flags */
	buf_put_be32(out, 0);		/* header extension */
	for (int i = 0; i < b->nsamples; i++)
	{
		int			nframes = b->stack_start[i + 1] - b->stack_start[i];

		buf_put_be16(out, 6);
		buf_put_be32(out, 8);
		buf_put_be64(out, (uint64_t) time_us);
		buf_put_be32(out, 8);
		buf_put_be64(out, (uint64_t) series_ids[b->sample_series[i]]);
		buf_put_be32(out, 4 + 8 * nframes);
		buf_put_be32(out, (uint32_t) nframes);
		for (int f = 0; f < nframes; f++)
			buf_put_be64(out, b->frames[b->stack_start[i] + f]);
		buf_put_be32(out, 8);
		buf_put_be64(out, (uint64_t) b->values[i]);
		buf_put_be32(out, 8);
		buf_put_be64(out, (uint64_t) cfg.period[b->series_kind[b->sample_series[i]]]);
		buf_put_be32(out, 8);
		buf_put_be64(out, b->duration_ns);
	}
	buf_put_be16(out, 0xffff);	/* trailer */
}

/* How writing a batch ended. */
typedef enum WriteResult
{
	WRITE_OK,
	WRITE_FAILED,				/* retried after a pause */
	WRITE_STALE,				/* the metastore was collected: rows to be chosen again */
} WriteResult;

/*
 * The metastore's garbage collection protocol (docs/ingestion.md): the
 * lock keeps a collection out until the transaction ends, and the
 * generation tells whether one ran since the batch's rows were chosen
 * (rows the agent left out as already stored may be gone).  Sets
 * b->committed_generation; false on a failure.
 */
static bool
check_generation(Batch *b)
{
	PGresult   *r;

	if (!run_ok("LOCK TABLE parca.samples IN ROW EXCLUSIVE MODE", 0, NULL))
		return false;
	r = run("SELECT parca_metastore_generation()", 0, NULL, PGRES_TUPLES_OK);
	if (r == NULL)
		return false;
	b->committed_generation = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return true;
}

/* The body of the batch's transaction; false on any failure. */
static bool
write_body(const Batch *b, bool *duplicate)
{
	char		batch_id[32];
	const char *params[6];
	PGresult   *r;
	int64_t    *series_ids;
	Buf			data = {0};
	Buf			kinds = {0};		/* int[] literal of the series' kinds */
	bool		ok;

	snprintf(batch_id, sizeof(batch_id), "%" PRIu64, b->batch_id);
	params[0] = cfg.node;
	params[1] = batch_id;
	r = run("INSERT INTO parca.agent_batches (node, batch_id) VALUES ($1, $2) "
			"ON CONFLICT DO NOTHING", 2, params, PGRES_COMMAND_OK);
	if (r == NULL)
		return false;
	*duplicate = strcmp(PQcmdTuples(r), "0") == 0;
	PQclear(r);
	if (*duplicate)
		return true;
	/* Only the batch being written can be retried: older records can go. */
	if (!run_ok("DELETE FROM parca.agent_batches WHERE node = $1 AND batch_id < $2",
				2, params))
		return false;

	/* The write protocol (sql/50_ingest.sql): each stores what is missing. */
	if (b->nnew_ids[0] > 0 &&
		!run_tuples("SELECT parca_store_mappings($1, $2, $3)", 3,
					(const char *const *) b->mappings))
		return false;
	if (b->nnew_ids[1] > 0 &&
		!run_tuples("SELECT parca_store_functions($1, $2, $3, $4, $5)", 5,
					(const char *const *) b->functions))
		return false;
	if (b->nnew_ids[2] > 0 &&
		!run_tuples("SELECT parca_store_locations($1, $2, $3, $4, $5, $6)", 6,
					(const char *const *) b->locations))
		return false;

	buf_append(&kinds, "{", 1);
	for (int i = 0; i < b->nseries; i++)
		buf_printf(&kinds, "%s%d", i ? "," : "", b->series_kind[i]);
	buf_append(&kinds, "}", 2);
	params[0] = cfg.profile_type[0];
	params[1] = cfg.profile_type[1];
	params[2] = b->series;
	params[3] = kinds.data;
	r = run("SELECT parca_series_id(CASE k WHEN 0 THEN $1 ELSE $2 END, l::jsonb) "
			"FROM unnest($3::text[], $4::int[]) WITH ORDINALITY AS u(l, k, n) ORDER BY n",
			4, params, PGRES_TUPLES_OK);
	buf_free(&kinds);
	if (r == NULL)
		return false;
	if (PQntuples(r) != b->nseries)
	{
		log_msg(LOG_WARN, "writing a batch failed: %d series ids for %d series",
				PQntuples(r), b->nseries);
		PQclear(r);
		return false;
	}
	series_ids = xcalloc(b->nseries, sizeof(int64_t));
	for (int i = 0; i < b->nseries; i++)
		series_ids[i] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);

	copy_data(b, series_ids, &data);
	free(series_ids);
	r = run("COPY parca.samples (time, series_id, stack, value, period, duration) "
			"FROM STDIN (FORMAT binary)", 0, NULL, PGRES_COPY_IN);
	ok = r != NULL;
	PQclear(r);
	if (ok && (PQputCopyData(conn, data.data, (int) data.len) != 1 ||
			   PQputCopyEnd(conn, NULL) != 1))
		ok = false;
	buf_free(&data);
	if (r != NULL)
	{
		/* Collect COPY's outcome (also after a failed put). */
		while ((r = PQgetResult(conn)) != NULL)
		{
			if (PQresultStatus(r) != PGRES_COMMAND_OK)
			{
				log_pq_error("writing a batch failed");
				ok = false;
			}
			PQclear(r);
		}
	}
	return ok;
}

static WriteResult
write_batch(Batch *b)
{
	bool		duplicate = false;

	if (!run_ok("BEGIN", 0, NULL))
		return WRITE_FAILED;
	if (!check_generation(b))
	{
		PQclear(PQexec(conn, "ROLLBACK"));
		return WRITE_FAILED;
	}
	if (b->generation >= 0 && b->generation != b->committed_generation)
	{
		PQclear(PQexec(conn, "ROLLBACK"));
		return WRITE_STALE;
	}
	if (!write_body(b, &duplicate))
	{
		PQclear(PQexec(conn, "ROLLBACK"));
		return WRITE_FAILED;
	}
	if (duplicate)
	{
		log_msg(LOG_INFO, "batch %" PRIu64 " was already stored; not writing it again",
				b->batch_id);
		PQclear(PQexec(conn, "ROLLBACK"));
		return WRITE_OK;
	}
	return run_ok("COMMIT", 0, NULL) ? WRITE_OK : WRITE_FAILED;
}

/*
 * The queue goes back to the agent, whose marks of what the server has
 * predate the collection that made generation: it chooses their rows
 * again and queues them anew (writer_take_returned).
 */
static void
return_queue(int64_t generation)
{
	int			n = stats.backlog_batches;

	if (returned_tail)
		returned_tail->next = queue_head;
	else
		returned = queue_head;
	returned_tail = queue_tail;
	if (generation > returned_generation)
		returned_generation = generation;
	queue_head = queue_tail = NULL;
	stats.backlog_bytes = 0;
	stats.backlog_batches = 0;
	log_msg(LOG_INFO, "the database's metastore was collected (generation %" PRId64
			"): %d batch(es) go back to have their rows chosen again", generation, n);
}

Batch *
writer_take_returned(int64_t *generation)
{
	Batch	   *list;

	pthread_mutex_lock(&lock);
	list = returned;
	*generation = returned_generation;
	returned = returned_tail = NULL;
	pthread_mutex_unlock(&lock);
	return list;
}

/* Wait up to ms (less if stopping and the drain deadline comes first). */
static void
wait_ms(int ms)
{
	struct timespec until;
	uint64_t	t = now_monotonic_ns() + (uint64_t) ms * 1000000u;

	/* While draining, retry often until the deadline. */
	if (stopping && ms > 1000)
		t = now_monotonic_ns() + 1000000000u;
	if (stopping && drain_deadline_ns < t)
		t = drain_deadline_ns;
	until.tv_sec = (time_t) (t / 1000000000u);
	until.tv_nsec = (long) (t % 1000000000u);
	pthread_cond_timedwait(&cond, &lock, &until);
}

/* The whole file, or NULL (logged). */
static char *
read_whole(int fd, size_t size, const char *build_id)
{
	char	   *data = xmalloc(size ? size : 1);
	size_t		done = 0;

	while (done < size)
	{
		ssize_t		n = pread(fd, data + done, size - done, (off_t) done);

		if (n <= 0)
		{
			log_msg(LOG_WARN, "debug information of build id %s: cannot read it: %s",
					build_id, n < 0 ? strerror(errno) : "the file shrank");
			free(data);
			return NULL;
		}
		done += (size_t) n;
	}
	return data;
}

/*
 * Upload the file unless the database has debug information for the build
 * id or the file is larger than the database takes.  Returns false if the
 * connection failed (the upload is then tried again).
 */
static bool
upload_debuginfo(const Upload *u)
{
	const char *params[2] = {u->build_id, NULL};
	int			lengths[2] = {0, 0};
	int			formats[2] = {0, 1};
	struct stat st;
	PGresult   *r;
	long long	limit;
	char	   *data;

	r = PQexecParams(conn,
					 "SELECT EXISTS (SELECT FROM parca.debuginfo WHERE build_id = $1), "
					 "pg_catalog.pg_size_bytes(pg_catalog.current_setting('parca.max_debuginfo_size'))",
					 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
	{
		log_pq_error("uploading debug information failed");
		PQclear(r);
		return PQstatus(conn) == CONNECTION_OK;
	}
	if (strcmp(PQgetvalue(r, 0, 0), "t") == 0)
	{
		PQclear(r);
		return true;
	}
	limit = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	PQclear(r);
	if (fstat(u->fd, &st) != 0 || st.st_size > limit || st.st_size > INT32_MAX)
	{
		log_msg(LOG_WARN, "debug information of build id %s: %lld bytes, larger than "
				"parca.max_debuginfo_size (%lld): not uploaded", u->build_id,
				(long long) st.st_size, limit);
		return true;
	}
	if ((data = read_whole(u->fd, (size_t) st.st_size, u->build_id)) == NULL)
		return true;
	params[1] = data;
	lengths[1] = (int) st.st_size;
	r = PQexecParams(conn, "SELECT parca_debuginfo_upload($1, $2)", 2, NULL, params,
					 lengths, formats, 0);
	free(data);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
	{
		log_pq_error("uploading debug information failed");
		PQclear(r);
		return PQstatus(conn) == CONNECTION_OK;
	}
	log_msg(LOG_INFO, "uploaded the debug information of build id %s (%lld bytes): "
			"%s locations named", u->build_id, (long long) st.st_size, PQgetvalue(r, 0, 0));
	PQclear(r);
	pthread_mutex_lock(&lock);
	stats.uploads++;
	pthread_mutex_unlock(&lock);
	return true;
}

static void *
writer_main(void *arg)
{
	int			backoff = BACKOFF_MIN_MS;

	pthread_mutex_lock(&lock);
	for (;;)
	{
		Batch	   *b;
		WriteResult result;

		if (stopping && (queue_head == NULL || now_monotonic_ns() >= drain_deadline_ns))
			break;
		if (queue_head == NULL && uploads != NULL && !stopping)
		{
			Upload	   *u = uploads;
			bool		done;

			pthread_mutex_unlock(&lock);
			done = connect_db() && upload_debuginfo(u);
			pthread_mutex_lock(&lock);
			if (done)
			{
				uploads = u->next;
				nuploads--;
				close(u->fd);
				free(u);
			}
			else
				wait_ms(backoff);
			continue;
		}
		if (queue_head == NULL)
		{
			pthread_cond_wait(&cond, &lock);
			continue;
		}
		b = in_flight = queue_head;
		pthread_mutex_unlock(&lock);

		result = connect_db() ? write_batch(b) : WRITE_FAILED;

		pthread_mutex_lock(&lock);
		in_flight = NULL;
		if (result == WRITE_STALE)
		{
			return_queue(b->committed_generation);
			continue;
		}
		if (result == WRITE_OK)
		{
			queue_head = b->next;
			if (queue_head == NULL)
				queue_tail = NULL;
			stats.backlog_bytes -= b->bytes;
			stats.backlog_batches--;
			stats.batches_written++;
			stats.samples_written += b->nsamples;
			stats.values_written += batch_values(b);
			b->next = committed;
			committed = b;
			if (backoff > BACKOFF_MIN_MS)
				log_msg(LOG_INFO, "writing again; %d batch(es) in the backlog",
						stats.backlog_batches);
			backoff = BACKOFF_MIN_MS;
			continue;
		}
		stats.failures++;
		if (conn && PQstatus(conn) != CONNECTION_OK)
		{
			PQfinish(conn);
			conn = NULL;
		}
		log_msg(LOG_WARN, "will retry in %d ms; %d batch(es), %zu bytes in the backlog",
				backoff, stats.backlog_batches, stats.backlog_bytes);
		wait_ms(backoff);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	while (uploads)
	{
		Upload	   *u = uploads;

		uploads = u->next;
		close(u->fd);
		free(u);
	}
	nuploads = 0;
	pthread_mutex_unlock(&lock);
	if (conn)
		PQfinish(conn);
	conn = NULL;
	return NULL;
}

void
writer_start(const WriterConfig *config)
{
	pthread_condattr_t attr;

	cfg = *config;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&thread, NULL, writer_main, NULL) != 0)
	{
		log_msg(LOG_ERROR, "cannot start the writer thread: %s", strerror(errno));
		exit(1);
	}
}

int
writer_stop(int drain_seconds)
{
	int			left;

	pthread_mutex_lock(&lock);
	stopping = true;
	drain_deadline_ns = now_monotonic_ns() + (uint64_t) drain_seconds * 1000000000u;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(thread, NULL);
	left = stats.backlog_batches;
	for (Batch *b = returned; b; b = b->next)
		left++;
	if (left > 0)
		log_msg(LOG_WARN, "%d batch(es) could not be written before exit", left);
	return left;
}
