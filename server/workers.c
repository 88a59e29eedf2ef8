/*
 * workers.c: the queue of received requests and the workers that store
 * them, each with its own database connection; and the health check that
 * /ready reports (server.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "ingest_otlp.h"
#include "ingest_pyroscope.h"
#include "log.h"
#include "payload.h"
#include "push_api.h"
#include "server.h"
#include "ui_api.h"

size_t
effective_profile_limit(void)
{
	size_t		db = atomic_load(&server.db_max_profile_size);

	return db && db < server.cfg.max_profile_size ? db : server.cfg.max_profile_size;
}

void
workers_enqueue(Req *q)
{
	pthread_mutex_lock(&server.queue_lock);
	q->next = NULL;
	if (server.queue_tail)
		server.queue_tail->next = q;
	else
		server.queue_head = q;
	server.queue_tail = q;
	pthread_cond_signal(&server.queue_cond);
	pthread_mutex_unlock(&server.queue_lock);
}

/* --save-bodies: the body as received, for debugging and the tests */
static void
save_body(const Req *q)
{
	static atomic_ulong seq;
	char		path[4096];
	int			fd;

	snprintf(path, sizeof(path), "%s/%lld-%lu-%s.body", server.cfg.save_bodies,
			 (long long) (q->info.received_ns / 1000000), atomic_fetch_add(&seq, 1) + 1,
			 endpoint_names[q->info.ep]);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, q->body.data, q->body.len) != (ssize_t) q->body.len)
		log_msg("warn", "cannot save a request body to %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	/* the query string beside it, for /ingest */
	if (q->info.nargs > 0)
	{
		FILE	   *f;

		strncat(path, ".query", sizeof(path) - strlen(path) - 1);
		f = fopen(path, "w");
		for (int i = 0; f && i < q->info.nargs; i++)
			fprintf(f, "%s=%s\n", q->info.args[i].key, q->info.args[i].value);
		if (f)
			fclose(f);
	}
}

/* a request's profiles decoded and stored; q->response set */
static void
process(Db *db, Req *q)
{
	Outcome    *o = &q->outcome;
	StoreBatch	batch = {0};
	uint8_t    *decoded = NULL;
	size_t		decoded_len = 0;
	bool		ok;

	memset(o, 0, sizeof(*o));
	o->status = 200;
	q->body.data = q->body.data ? q->body.data : (uint8_t *) calloc(1, 1);
	q->info.body = q->body.data;
	q->info.body_len = q->body.len;
	q->info.max_profile_size = effective_profile_limit();
	q->info.jfr_thread_labels = server.cfg.jfr_thread_labels;
	if (monotonic_seconds() - q->start > server.cfg.request_timeout)
	{
		outcome_fail(o, 503, "queue_timeout", "the server is busy: the request waited more than %d s "
					 "for a database connection", server.cfg.request_timeout);
		o->retry_after = 5;
		goto answer;
	}
	if (q->info.ep == EP_API)
	{
		ui_api_answer(db, &q->info, server.cfg.max_response_size, &q->response, o);
		if (o->status == 200)
			return;
		goto answer;
	}
	if (server.cfg.save_bodies)
		save_body(q);
	if (!payload_decode_body(&q->info, &decoded, &decoded_len, o))
		goto answer;
	if (decoded)
	{
		q->info.body = decoded;
		q->info.body_len = decoded_len;
	}
	switch (q->info.ep)
	{
		case EP_INGEST:
			ok = ingest_pyroscope(&q->info, &batch, o);
			break;
		case EP_PUSH:
			ok = ingest_push(&q->info, q->info.body, q->info.body_len, &batch, o);
			break;
		case EP_OTLP:
			ok = ingest_otlp(&q->info, q->info.body, q->info.body_len, &batch, o);
			break;
		default:
			outcome_fail(o, 404, "not_found", "no such endpoint");
			ok = false;
			break;
	}
	/* the body is not needed any more: give its memory back now */
	free(decoded);
	decoded = NULL;
	buf_free(&q->body);
	q->info.body = NULL;
	q->info.body_len = 0;
	if (ok && batch.n > 0)
		db_store(db, q->info.role, &batch, o);
	else if (ok)
		o->status = 200;
answer:
	free(decoded);
	batch_free(&batch);
	response_build(q->info.ep, q->info.content_type, o, &q->response);
}

static void *
worker_main(void *arg)
{
	Db		   *db = db_new(server.cfg.dsn, server.cfg.request_timeout);

	for (;;)
	{
		Req		   *q;

		pthread_mutex_lock(&server.queue_lock);
		while (!server.queue_head && !server.workers_stop)
			pthread_cond_wait(&server.queue_cond, &server.queue_lock);
		q = server.queue_head;
		if (q)
		{
			server.queue_head = q->next;
			if (!server.queue_head)
				server.queue_tail = NULL;
		}
		pthread_mutex_unlock(&server.queue_lock);
		if (!q)
			break;
		if (!db)
		{
			outcome_fail(&q->outcome, 503, "out_of_memory", "out of memory");
			response_build(q->info.ep, q->info.content_type, &q->outcome, &q->response);
		}
		else
			process(db, q);
		MHD_resume_connection(q->conn);
	}
	db_free(db);
	return NULL;
}

/* the database checked every few seconds (every second while it is away) */
static void *
health_main(void *arg)
{
	Db		   *db = db_new(server.cfg.dsn, 10);
	bool		was_up = true;
	bool		first = true;

	while (!server.workers_stop)
	{
		char		err[512] = "";
		size_t		limit = 0;
		bool		up = db && db_check(db, &limit, err, sizeof(err));
		struct timespec until;

		if (up && limit)
			atomic_store(&server.db_max_profile_size, limit);
		atomic_store(&server.db_up, up);
		pthread_mutex_lock(&server.queue_lock);
		snprintf(server.db_error, sizeof(server.db_error), "%s", up ? "" : err);
		if (up != was_up || first)
		{
			if (up)
				log_msg("info", "database ready (parca.max_profile_size %zu bytes)", limit);
			else
				log_msg("warn", "database not ready: %s", err);
		}
		was_up = up;
		first = false;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += up ? 5 : 1;
		if (!server.workers_stop)
			pthread_cond_timedwait(&server.health_cond, &server.queue_lock, &until);
		pthread_mutex_unlock(&server.queue_lock);
	}
	db_free(db);
	return NULL;
}

bool
workers_start(char *err, size_t errlen)
{
	int			rc;

	server.workers = calloc((size_t) server.cfg.workers, sizeof(pthread_t));
	if (!server.workers)
	{
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (int i = 0; i < server.cfg.workers; i++)
		if ((rc = pthread_create(&server.workers[i], NULL, worker_main, NULL)) != 0)
		{
			snprintf(err, errlen, "cannot start a worker thread: %s", strerror(rc));
			return false;
		}
	if ((rc = pthread_create(&server.health, NULL, health_main, NULL)) != 0)
	{
		snprintf(err, errlen, "cannot start the health thread: %s", strerror(rc));
		return false;
	}
	return true;
}

void
workers_stop(void)
{
	pthread_mutex_lock(&server.queue_lock);
	server.workers_stop = true;
	pthread_cond_broadcast(&server.queue_cond);
	pthread_cond_broadcast(&server.health_cond);
	pthread_mutex_unlock(&server.queue_lock);
	for (int i = 0; i < server.cfg.workers; i++)
		pthread_join(server.workers[i], NULL);
	pthread_join(server.health, NULL);
	free(server.workers);
	server.workers = NULL;

	/*
	 * A request whose body was complete only after the workers left (past
	 * the drain timeout) is answered, so that no connection stays suspended
	 */
	pthread_mutex_lock(&server.queue_lock);
	while (server.queue_head)
	{
		Req		   *q = server.queue_head;

		server.queue_head = q->next;
		outcome_fail(&q->outcome, 503, "shutting_down", "the server is shutting down");
		q->outcome.retry_after = 1;
		response_build(q->info.ep, q->info.content_type, &q->outcome, &q->response);
		MHD_resume_connection(q->conn);
	}
	server.queue_tail = NULL;
	pthread_mutex_unlock(&server.queue_lock);
}
