/*
 * OpenTelemetry profiles (OTLP, profiles/v1development as of
 * opentelemetry-proto v1.10.0 and v1.11.0) to pprof profiles: each OTLP
 * profile of an ExportProfilesServiceRequest, in protobuf or OTLP/JSON, with
 * the request's dictionary resolved, as one pprof with its resource and
 * scope attributes as labels.  Plain C, no PostgreSQL.
 */
#ifndef SERVER_OTLP_H
#define SERVER_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "push_profile.h"

/*
 * Converts the request data[0..len) (protobuf, or JSON when json) into out
 * (which must be empty; the caller frees it with push_profiles_free).
 * Memory stays within limits->max_bytes, the profiles made included.  False
 * with a message in err (out then empty) on a malformed request or one past
 * the limits.  A request without profiles gives true and no profile.
 */
bool		otlp_convert(const uint8_t *data, size_t len, bool json, const PushLimits *limits,
						 PushedProfiles *out, char *err, size_t errlen);

#endif
