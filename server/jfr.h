/*
 * JDK Flight Recorder recordings (as the JDK and async-profiler write them)
 * to pprof profiles: one profile per kind of event (CPU and wall samples,
 * allocations, monitor and park contention), each named as docs/push.md
 * ("JFR") says.  Plain C, no PostgreSQL.
 */
#ifndef SERVER_JFR_H
#define SERVER_JFR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "push_profile.h"

/*
 * Converts the recording data[0..len) (not gzipped), every chunk of it, into
 * out (which must be empty; the caller frees it with push_profiles_free).
 * Memory stays within limits->max_bytes, the profiles made included.  False
 * with a message in err (out then empty) on a malformed recording or one
 * past the limits.  A recording without any of the events read gives true
 * and no profile.
 */
bool		jfr_convert(const uint8_t *data, size_t len, const PushLimits *limits, PushedProfiles *out,
						char *err, size_t errlen);

#endif
