/* payload.c: request bytes made plain within limits (payload.h) */
#include "payload.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "inflate.h"

static bool
inflate_failed(InflateResult res, const char *what, size_t limit, Outcome *o)
{
	if (res == INFLATE_TOO_LARGE)
		outcome_fail(o, 413, "profile_too_large", "%s is larger than the limit (%zu bytes) once decompressed",
					 what, limit);
	else if (res == INFLATE_INVALID)
		outcome_fail(o, 400, "bad_gzip", "%s: truncated or damaged gzip data", what);
	else
	{
		outcome_fail(o, 503, "out_of_memory", "out of memory");
		o->retry_after = 5;
	}
	return false;
}

bool
payload_plain(const uint8_t *data, size_t len, size_t limit, const char *what,
			  uint8_t **out, size_t *out_len, Outcome *o)
{
	InflateResult res;

	*out = NULL;
	*out_len = 0;
	if (!is_gzip(data, len))
	{
		if (len > limit)
		{
			outcome_fail(o, 413, "profile_too_large", "%s is larger than the limit (%zu bytes)", what, limit);
			return false;
		}
		*out = malloc(len ? len : 1);
		if (!*out)
			return inflate_failed(INFLATE_NOMEM, what, limit, o);
		if (len)
			memcpy(*out, data, len);
		*out_len = len;
		return true;
	}
	res = gunzip_bounded(data, len, limit, out, out_len);
	return res == INFLATE_OK || inflate_failed(res, what, limit, o);
}

bool
payload_decode_body(const RequestInfo *r, uint8_t **out, size_t *out_len, Outcome *o)
{
	const char *enc = r->content_encoding;
	InflateResult res;

	*out = NULL;
	*out_len = 0;
	if (!enc || !*enc || strcasecmp(enc, "identity") == 0)
		return true;
	if (strcasecmp(enc, "gzip") != 0 && strcasecmp(enc, "x-gzip") != 0)
	{
		outcome_fail(o, 415, "unsupported_encoding",
					 "Content-Encoding \"%.32s\" is not supported: gzip or identity", enc);
		return false;
	}
	res = gunzip_bounded(r->body, r->body_len, r->max_profile_size, out, out_len);
	return res == INFLATE_OK || inflate_failed(res, "the request body", r->max_profile_size, o);
}
