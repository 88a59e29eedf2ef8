/* metrics.c: counters and the latency histogram (metrics.h) */
#include "metrics.h"

#include <pthread.h>
#include <string.h>

const char *const endpoint_names[EP_COUNT] = {"ingest", "push", "otlp", "ready", "metrics", "api", "ui", "other"};

static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))
#define MAX_REASONS 64

typedef struct EndpointStats
{
	unsigned long long by_status[600];
	unsigned long long bytes;
	unsigned long long profiles;
	unsigned long long rows;
	unsigned long long bucket[NBUCKETS];
	unsigned long long count;
	double		sum;
	const char *reason[MAX_REASONS];
	unsigned long long errors[MAX_REASONS];
	int			nreasons;
} EndpointStats;

static EndpointStats stats[EP_COUNT];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void
metrics_observe(Endpoint ep, int status, double seconds, size_t bytes,
				size_t profiles, long long rows, const char *reason)
{
	EndpointStats *s;

	if (ep < 0 || ep >= EP_COUNT)
		ep = EP_OTHER;
	s = &stats[ep];
	pthread_mutex_lock(&lock);
	if (status >= 100 && status < 600)
		s->by_status[status]++;
	s->bytes += bytes;
	s->profiles += profiles;
	if (rows > 0)
		s->rows += (unsigned long long) rows;
	for (size_t b = 0; b < NBUCKETS; b++)
		if (seconds <= buckets[b])
			s->bucket[b]++;
	s->count++;
	s->sum += seconds;
	if (reason)
	{
		int			i;

		for (i = 0; i < s->nreasons; i++)
			if (strcmp(s->reason[i], reason) == 0)
				break;
		if (i == s->nreasons && s->nreasons < MAX_REASONS)
			s->reason[s->nreasons++] = reason;
		if (i < s->nreasons)
			s->errors[i]++;
	}
	pthread_mutex_unlock(&lock);
}

void
metrics_render(Buf *out, int in_flight, size_t body_bytes, bool database_up)
{
	pthread_mutex_lock(&lock);
	buf_puts(out, "# HELP parca_server_requests_total HTTP requests answered, by endpoint and status code.\n"
			 "# TYPE parca_server_requests_total counter\n");
	for (int e = 0; e < EP_COUNT; e++)
		for (int c = 100; c < 600; c++)
			if (stats[e].by_status[c])
				buf_printf(out, "parca_server_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
						   endpoint_names[e], c, stats[e].by_status[c]);
	buf_puts(out, "# HELP parca_server_received_bytes_total Bytes of request bodies received, as sent.\n"
			 "# TYPE parca_server_received_bytes_total counter\n");
	for (int e = 0; e < EP_COUNT; e++)
		buf_printf(out, "parca_server_received_bytes_total{endpoint=\"%s\"} %llu\n", endpoint_names[e], stats[e].bytes);
	buf_puts(out, "# HELP parca_server_profiles_total Profiles stored (parca_ingest_pprof calls committed).\n"
			 "# TYPE parca_server_profiles_total counter\n");
	for (int e = 0; e < EP_COUNT; e++)
		buf_printf(out, "parca_server_profiles_total{endpoint=\"%s\"} %llu\n", endpoint_names[e], stats[e].profiles);
	buf_puts(out, "# HELP parca_server_rows_total Sample rows stored.\n"
			 "# TYPE parca_server_rows_total counter\n");
	for (int e = 0; e < EP_COUNT; e++)
		buf_printf(out, "parca_server_rows_total{endpoint=\"%s\"} %llu\n", endpoint_names[e], stats[e].rows);
	buf_puts(out, "# HELP parca_server_errors_total Requests that stored nothing, by reason.\n"
			 "# TYPE parca_server_errors_total counter\n");
	for (int e = 0; e < EP_COUNT; e++)
		for (int i = 0; i < stats[e].nreasons; i++)
			buf_printf(out, "parca_server_errors_total{endpoint=\"%s\",reason=\"%s\"} %llu\n",
					   endpoint_names[e], stats[e].reason[i], stats[e].errors[i]);
	buf_puts(out, "# HELP parca_server_request_duration_seconds Time from a request's first byte to its answer.\n"
			 "# TYPE parca_server_request_duration_seconds histogram\n");
	for (int e = 0; e < EP_COUNT; e++)
	{
		for (size_t b = 0; b < NBUCKETS; b++)
			buf_printf(out, "parca_server_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%g\"} %llu\n",
					   endpoint_names[e], buckets[b], stats[e].bucket[b]);
		buf_printf(out, "parca_server_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n",
				   endpoint_names[e], stats[e].count);
		buf_printf(out, "parca_server_request_duration_seconds_sum{endpoint=\"%s\"} %.6f\n", endpoint_names[e], stats[e].sum);
		buf_printf(out, "parca_server_request_duration_seconds_count{endpoint=\"%s\"} %llu\n", endpoint_names[e], stats[e].count);
	}
	pthread_mutex_unlock(&lock);
	buf_printf(out, "# HELP parca_server_requests_in_flight Requests being received, queued or stored.\n"
			   "# TYPE parca_server_requests_in_flight gauge\n"
			   "parca_server_requests_in_flight %d\n"
			   "# HELP parca_server_body_bytes Bytes of request bodies held now.\n"
			   "# TYPE parca_server_body_bytes gauge\n"
			   "parca_server_body_bytes %zu\n"
			   "# HELP parca_server_database_up Whether the last check of the database succeeded.\n"
			   "# TYPE parca_server_database_up gauge\n"
			   "parca_server_database_up %d\n", in_flight, body_bytes, database_up ? 1 : 0);
}
