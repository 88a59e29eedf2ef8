/* ingest_otlp.c: OpenTelemetry profiles over HTTP (ingest_otlp.h) */
#include "ingest_otlp.h"

#include "otlp.h"
#include "pushed.h"

bool
otlp_content_type(const char *content_type, bool *json, Outcome *o)
{
	if (media_type_is(content_type, "application/json"))
		*json = true;
	else if (media_type_is(content_type, "application/x-protobuf"))
		*json = false;
	else
	{
		outcome_fail(o, 415, "unsupported_content_type",
					 "Content-Type \"%.64s\" is not supported: application/x-protobuf or application/json",
					 content_type ? content_type : "");
		return false;
	}
	return true;
}

bool
ingest_otlp(const RequestInfo *r, const uint8_t *body, size_t len, StoreBatch *batch, Outcome *o)
{
	PushedProfiles profiles = {0};
	PushLimits	limits = {r->max_profile_size};
	char		err[512];
	bool		json;
	bool		ok;

	if (!otlp_content_type(r->content_type, &json, o))
		return false;
	if (!otlp_convert(body, len, json, &limits, &profiles, err, sizeof(err)))
	{
		outcome_fail(o, 400, "invalid_otlp", "%s", err);
		return false;
	}
	/* an empty request is a valid one: it stores nothing */
	ok = pushed_to_batch(r, NULL, &profiles, batch, o);
	push_profiles_free(&profiles);
	return ok;
}
