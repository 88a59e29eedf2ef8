/*
 * The web UI's API: GET /api/... answered as JSON (or pprof bytes) from the
 * query functions, with the request's parameters bound, never SQL from the
 * browser; run as the request's role, read only (docs/web.md, "The API").
 */
#ifndef SERVER_UI_API_H
#define SERVER_UI_API_H

#include <stddef.h>

#include "db.h"
#include "request.h"
#include "responses.h"

#define UI_API_PREFIX "/api/"

/*
 * Answers r (r->path under UI_API_PREFIX) into out; on failure o says why
 * and out is left for response_build.  max_response bounds the body.
 */
void		ui_api_answer(Db *db, const RequestInfo *r, size_t max_response, Response *out, Outcome *o);

#endif
