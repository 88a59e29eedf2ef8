/*
 * Answers in each protocol's own form: Pyroscope's /ingest in plain text,
 * Connect's error JSON for the Push API, OTLP's Status for OpenTelemetry.
 */
#ifndef SERVER_RESPONSES_H
#define SERVER_RESPONSES_H

#include <stddef.h>

#include "request.h"

typedef struct Response
{
	int			status;			/* the HTTP status sent */
	char	   *body;			/* malloc'd */
	size_t		len;
	const char *content_type;
	const char *content_disposition;	/* NULL: none */
} Response;

/* request_content_type chooses JSON or protobuf where the protocol answers in kind */
void		response_build(Endpoint ep, const char *request_content_type, const Outcome *o, Response *out);

#endif
