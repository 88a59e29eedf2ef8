/* The profiles a converter (JFR, OTLP) made, added to a request's batch. */
#ifndef SERVER_PUSHED_H
#define SERVER_PUSHED_H

#include "push_profile.h"
#include "request.h"

/*
 * Each profile with base's labels over its own and the request's (the
 * tenant) over both; the pprof bytes become the batch's.  False with o set.
 */
bool		pushed_to_batch(const RequestInfo *r, const LabelSet *base, PushedProfiles *profiles,
							StoreBatch *batch, Outcome *o);

#endif
