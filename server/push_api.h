/*
 * Pyroscope's Push API, push.v1.PusherService/Push, as a Connect unary
 * call over HTTP/1.1: a PushRequest in protobuf (application/proto) or
 * JSON (application/json), each series' labels with its pprof profiles.
 */
#ifndef SERVER_PUSH_API_H
#define SERVER_PUSH_API_H

#include "request.h"

#define PUSH_PATH "/push.v1.PusherService/Push"

/* whether the Content-Type is JSON (else protobuf); false with o if neither */
bool		push_content_type(const char *content_type, bool *json, Outcome *o);

/* body is the request body with its Content-Encoding undone */
bool		ingest_push(const RequestInfo *r, const uint8_t *body, size_t len,
						StoreBatch *batch, Outcome *o);

#endif
