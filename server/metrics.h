/*
 * /metrics in Prometheus' text format: requests, bytes, profiles, rows and
 * errors by endpoint, and a latency histogram.
 */
#ifndef SERVER_METRICS_H
#define SERVER_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef enum Endpoint
{
	EP_INGEST,					/* Pyroscope /ingest */
	EP_PUSH,					/* Pyroscope Push API (Connect) */
	EP_OTLP,					/* OpenTelemetry profiles */
	EP_READY,
	EP_METRICS,
	EP_API,						/* the web UI's API (ui_api.c) */
	EP_UI,						/* the web UI's files (ui_files.c) */
	EP_OTHER,
	EP_COUNT
} Endpoint;

extern const char *const endpoint_names[EP_COUNT];

/* one answered request; reason (a fixed string) names why it failed */
void		metrics_observe(Endpoint ep, int status, double seconds, size_t bytes,
							size_t profiles, long long rows, const char *reason);
void		metrics_render(Buf *out, int in_flight, size_t body_bytes, bool database_up);

#endif
