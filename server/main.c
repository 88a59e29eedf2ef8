/*
 * parca-server: accepts profiles pushed over HTTP (Pyroscope's /ingest and
 * Push API, OpenTelemetry profiles) and stores them in PostgreSQL through
 * parca_ingest_pprof.  docs/push.md says what it accepts and how to run it.
 *
 * main.c: start-up, and the graceful stop on SIGTERM or SIGINT (no new
 * connections, requests in flight finished within --drain-timeout).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "server.h"

Server		server;

int
main(int argc, char **argv)
{
	sigset_t	signals;
	int			sig = 0;
	char		err[512];
	struct timespec deadline;

	/*
	 * Few malloc arenas: each worker thread would otherwise get one of its
	 * own, and every arena keeps the memory its last profile freed.
	 */
	mallopt(M_ARENA_MAX, 2);
	if (!config_load(&server.cfg, argc, argv))
		return 2;
	if (server.cfg.auth_file)
	{
		server.auth = auth_load(server.cfg.auth_file, err, sizeof(err));
		if (!server.auth)
		{
			fprintf(stderr, "parca-server: --auth-file: %s\n", err);
			return 2;
		}
	}
	if (auth_count(server.auth) == 0 && !server.cfg.allow_anonymous)
	{
		fprintf(stderr, "parca-server: no credentials: give --auth-file (tokens or users, each with its role), "
				"or --allow-anonymous to store requests and serve the web UI's API without credentials "
				"on a loopback address only\n");
		return 2;
	}
	pthread_mutex_init(&server.queue_lock, NULL);
	pthread_cond_init(&server.queue_cond, NULL);
	pthread_cond_init(&server.idle_cond, NULL);
	pthread_cond_init(&server.health_cond, NULL);
	atomic_store(&server.db_up, false);

	/* the signals wait for this thread alone: every thread started after inherits the mask */
	sigemptyset(&signals);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &signals, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!workers_start(err, sizeof(err)) || !http_start(err, sizeof(err)))
	{
		fprintf(stderr, "parca-server: %s\n", err);
		return 1;
	}
	log_msg("info", "listening on %s%s with %d database connections; %s", server.cfg.listen,
			server.cfg.tls_cert ? " (TLS)" : "", server.cfg.workers,
			auth_count(server.auth) ? "credentials required" : "no credentials required (loopback)");

	while (sigwait(&signals, &sig) != 0)
		;
	log_msg("info", "signal %d: finishing the requests in flight (at most %d s)", sig, server.cfg.drain_timeout);
	atomic_store(&server.draining, true);
	http_quiesce();
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += server.cfg.drain_timeout;
	pthread_mutex_lock(&server.queue_lock);
	while (atomic_load(&server.in_flight) > 0)
		if (pthread_cond_timedwait(&server.idle_cond, &server.queue_lock, &deadline) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&server.queue_lock);
	if (atomic_load(&server.in_flight) > 0)
		log_msg("warn", "%d requests still in flight after %d s: stopping anyway", atomic_load(&server.in_flight),
				server.cfg.drain_timeout);
	/* the workers finish what they hold, so that no connection stays suspended */
	workers_stop();
	http_stop();
	auth_free(server.auth);
	log_msg("info", "stopped");
	return 0;
}
