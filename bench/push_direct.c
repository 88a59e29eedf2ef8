/*
 * push_direct: the baseline of bench/push.sh.  N clients, each with its
 * own libpq connection, store one pprof file again and again with
 * parca_ingest_pprof (the same bytes a client sends parca-server), for a
 * number of seconds; prints the profiles stored and the latency
 * percentiles in the form pushclient's load command prints them.
 *
 *   push_direct CONNINFO FILE CLIENTS SECONDS
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

static const char *conninfo;
static char *data;
static int	data_len;
static double seconds;
static double start_time;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double *latencies;
static size_t nlat;
static size_t cap;
static long failed;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *
client(void *arg)
{
	int			id = (int) (long) arg;
	PGconn	   *conn = PQconnectdb(conninfo);
	char		labels[64];
	const char *values[2];
	int			lengths[2] = {data_len, 0};
	int			formats[2] = {1, 0};

	if (PQstatus(conn) != CONNECTION_OK)
	{
		fprintf(stderr, "push_direct: %s", PQerrorMessage(conn));
		exit(1);
	}
	snprintf(labels, sizeof(labels), "{\"service_name\": \"direct\", \"client\": \"%d\"}", id);
	values[0] = data;
	values[1] = labels;
	while (now() < start_time + seconds)
	{
		double		t0 = now();
		PGresult   *res = PQexecParams(conn, "SELECT public.parca_ingest_pprof($1::bytea, 'memory', $2::jsonb)",
									   2, NULL, values, lengths, formats, 0);
		bool		ok = PQresultStatus(res) == PGRES_TUPLES_OK;
		double		d = now() - t0;

		if (!ok)
			fprintf(stderr, "push_direct: %s", PQresultErrorMessage(res));
		PQclear(res);
		pthread_mutex_lock(&lock);
		if (!ok)
			failed++;
		else
		{
			if (nlat == cap)
			{
				cap = cap ? cap * 2 : 4096;
				latencies = realloc(latencies, cap * sizeof(double));
			}
			latencies[nlat++] = d;
		}
		pthread_mutex_unlock(&lock);
	}
	PQfinish(conn);
	return NULL;
}

static int
cmp(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	FILE	   *f;
	long		n;
	int			clients;
	pthread_t  *threads;
	double		elapsed;

	if (argc != 5)
	{
		fprintf(stderr, "usage: push_direct CONNINFO FILE CLIENTS SECONDS\n");
		return 2;
	}
	conninfo = argv[1];
	clients = atoi(argv[3]);
	seconds = atof(argv[4]);
	f = fopen(argv[2], "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0)
	{
		perror(argv[2]);
		return 1;
	}
	rewind(f);
	data = malloc(n);
	data_len = (int) n;
	if (fread(data, 1, n, f) != (size_t) n)
		return 1;
	fclose(f);
	threads = calloc(clients, sizeof(pthread_t));
	start_time = now();
	for (int i = 0; i < clients; i++)
		pthread_create(&threads[i], NULL, client, (void *) (long) i);
	for (int i = 0; i < clients; i++)
		pthread_join(threads[i], NULL);
	elapsed = now() - start_time;
	qsort(latencies, nlat, sizeof(double), cmp);
	printf("profiles %zu failed %ld seconds %.3f p50_ms %.2f p99_ms %.2f\n", nlat, failed, elapsed,
		   nlat ? latencies[(size_t) (0.5 * (nlat - 1))] * 1000 : 0,
		   nlat ? latencies[(size_t) (0.99 * (nlat - 1))] * 1000 : 0);
	return 0;
}
