/*
 * Pyroscope's POST /ingest: pprof (raw or multipart, with prev_profile and
 * sample_type_config), folded stacks, and JFR, as the Pyroscope SDKs send
 * them (docs/push.md, "Pyroscope /ingest").
 */
#ifndef SERVER_INGEST_PYROSCOPE_H
#define SERVER_INGEST_PYROSCOPE_H

#include "request.h"

/* The request's profiles into batch; false with o set. */
bool		ingest_pyroscope(const RequestInfo *r, StoreBatch *batch, Outcome *o);

#endif
