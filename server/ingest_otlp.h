/*
 * OpenTelemetry profiles over HTTP (POST /v1development/profiles and
 * /v1/profiles): an ExportProfilesServiceRequest in protobuf or JSON,
 * converted by otlp.c.
 */
#ifndef SERVER_INGEST_OTLP_H
#define SERVER_INGEST_OTLP_H

#include "request.h"

/* whether the Content-Type is JSON (else protobuf); false with o if neither */
bool		otlp_content_type(const char *content_type, bool *json, Outcome *o);

/* body is the request body with its Content-Encoding undone */
bool		ingest_otlp(const RequestInfo *r, const uint8_t *body, size_t len,
						StoreBatch *batch, Outcome *o);

#endif
