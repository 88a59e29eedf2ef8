/* push_api.c: Pyroscope's Push API (push_api.h) */
#include "push_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "alloc_budget.h"
#include "base64.h"
#include "json_limits.h"
#include "payload.h"
#include "push.pb-c.h"

#define JSON_MAX_DEPTH 16

bool
push_content_type(const char *content_type, bool *json, Outcome *o)
{
	if (media_type_is(content_type, "application/json"))
		*json = true;
	else if (media_type_is(content_type, "application/proto") ||
			 media_type_is(content_type, "application/protobuf") ||
			 media_type_is(content_type, "application/x-protobuf"))
		*json = false;
	else
	{
		outcome_fail(o, 415, "unsupported_content_type",
					 "Content-Type \"%.64s\" is not supported: application/proto or application/json",
					 content_type ? content_type : "");
		return false;
	}
	return true;
}

/* one series: its labels (name and label set) and each profile into the batch */
typedef struct Series
{
	char		name[128];
	LabelSet	labels;
} Series;

static bool
series_label(Series *s, size_t index, const char *name, const char *value, Outcome *o)
{
	char		err[256];

	if (!name || !value)
		return true;
	if (strcmp(name, "__name__") == 0)
	{
		if (strlen(value) >= sizeof(s->name) || !utf8_valid(value, strlen(value)))
		{
			outcome_fail(o, 400, "bad_labels", "series %zu: __name__ is not a profile name of up to %zu bytes",
						 index + 1, sizeof(s->name) - 1);
			return false;
		}
		strcpy(s->name, value);
		return true;
	}
	/* the private labels of Pyroscope (__delta__, __session_id__, ...) */
	if (strncmp(name, "__", 2) == 0)
		return true;
	if (!labelset_set(&s->labels, name, value, true, err, sizeof(err)))
	{
		outcome_fail(o, 400, "bad_labels", "series %zu: %s", index + 1, err);
		return false;
	}
	return true;
}

static bool
series_profile(const RequestInfo *r, Series *s, size_t index, const uint8_t *data, size_t len,
			   StoreBatch *batch, Outcome *o)
{
	uint8_t    *plain;
	size_t		plain_len;
	char		what[64];

	if (!s->name[0])
	{
		outcome_fail(o, 400, "bad_labels", "series %zu has no __name__ label (the profile's name, as process_cpu)",
					 index + 1);
		return false;
	}
	snprintf(what, sizeof(what), "series %zu's profile", index + 1);
	if (!payload_plain(data, len, r->max_profile_size, what, &plain, &plain_len, o))
		return false;
	return batch_add(batch, s->name, &s->labels, plain, plain_len, o);
}

static bool
decode_proto(const RequestInfo *r, const uint8_t *body, size_t len, StoreBatch *batch, Outcome *o)
{
	AllocBudget budget;
	PyroscopePush__PushRequest *req;
	bool		ok = true;

	alloc_budget_init(&budget, r->max_profile_size);
	req = pyroscope_push__push_request__unpack(&budget.allocator, len, body);
	if (!req)
	{
		if (budget.exceeded)
			outcome_fail(o, 413, "request_too_large", "the PushRequest needs more than %zu bytes to decode",
						 r->max_profile_size);
		else
			outcome_fail(o, 400, "bad_request", "the body is not a PushRequest protocol buffer message, or a truncated one");
		return false;
	}
	for (size_t i = 0; ok && i < req->n_series; i++)
	{
		PyroscopePush__RawProfileSeries *ps = req->series[i];
		Series		s;

		memset(s.name, 0, sizeof(s.name));
		labelset_init(&s.labels);
		for (size_t k = 0; ok && k < ps->n_labels; k++)
			ok = series_label(&s, i, ps->labels[k]->name, ps->labels[k]->value, o);
		ok = ok && request_labels(r, &s.labels, o);
		for (size_t k = 0; ok && k < ps->n_samples; k++)
			ok = series_profile(r, &s, i, ps->samples[k]->raw_profile.data, ps->samples[k]->raw_profile.len,
								batch, o);
		labelset_free(&s.labels);
	}
	pyroscope_push__push_request__free_unpacked(req, &budget.allocator);
	return ok;
}

/* the member named (in protojson, the JSON name or the field's own) */
static json_object *
member(json_object *obj, const char *json_name, const char *proto_name)
{
	json_object *v = NULL;

	if (json_object_object_get_ex(obj, json_name, &v))
		return v;
	if (proto_name && json_object_object_get_ex(obj, proto_name, &v))
		return v;
	return NULL;
}

static bool
decode_json(const RequestInfo *r, const uint8_t *body, size_t len, StoreBatch *batch, Outcome *o)
{
	json_tokener *tok;
	json_object *root;
	json_object *series;
	bool		ok = true;

	if (len > INT32_MAX || !utf8_valid((const char *) body, len))
	{
		outcome_fail(o, 400, "bad_request", "the body is not valid UTF-8 text");
		return false;
	}
	if (!json_values_within((const char *) body, len, JSON_MAX_VALUES))
	{
		outcome_fail(o, 400, "bad_request", "the JSON body has more than %d values", JSON_MAX_VALUES);
		return false;
	}
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok)
	{
		outcome_fail(o, 503, "out_of_memory", "out of memory");
		return false;
	}
	root = json_tokener_parse_ex(tok, (const char *) body, (int) len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success || tok->char_offset < (int) len ||
		!json_object_is_type(root, json_type_object))
	{
		outcome_fail(o, 400, "bad_request", "the body is not a PushRequest in JSON (an object of at most %d levels): %s",
					 JSON_MAX_DEPTH, json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(root);
		json_tokener_free(tok);
		return false;
	}
	json_tokener_free(tok);
	series = member(root, "series", NULL);
	if (series && !json_object_is_type(series, json_type_array))
	{
		outcome_fail(o, 400, "bad_request", "\"series\" is not an array");
		ok = false;
	}
	for (size_t i = 0; ok && series && i < json_object_array_length(series); i++)
	{
		json_object *js = json_object_array_get_idx(series, i);
		json_object *labels = js ? member(js, "labels", NULL) : NULL;
		json_object *samples = js ? member(js, "samples", NULL) : NULL;
		Series		s;

		memset(s.name, 0, sizeof(s.name));
		labelset_init(&s.labels);
		if (!js || !json_object_is_type(js, json_type_object) ||
			(labels && !json_object_is_type(labels, json_type_array)) ||
			(samples && !json_object_is_type(samples, json_type_array)))
		{
			outcome_fail(o, 400, "bad_request", "series %zu is not an object with arrays \"labels\" and \"samples\"", i + 1);
			ok = false;
		}
		for (size_t k = 0; ok && labels && k < json_object_array_length(labels); k++)
		{
			json_object *l = json_object_array_get_idx(labels, k);
			json_object *n = l ? member(l, "name", NULL) : NULL;
			json_object *v = l ? member(l, "value", NULL) : NULL;

			if (!n || !json_object_is_type(n, json_type_string) || (v && !json_object_is_type(v, json_type_string)))
			{
				outcome_fail(o, 400, "bad_request", "series %zu: label %zu is not {\"name\": string, \"value\": string}",
							 i + 1, k + 1);
				ok = false;
				break;
			}
			ok = series_label(&s, i, json_object_get_string(n), v ? json_object_get_string(v) : "", o);
		}
		ok = ok && request_labels(r, &s.labels, o);
		for (size_t k = 0; ok && samples && k < json_object_array_length(samples); k++)
		{
			json_object *smp = json_object_array_get_idx(samples, k);
			json_object *raw = smp ? member(smp, "rawProfile", "raw_profile") : NULL;
			const char *text;
			size_t		tlen;
			uint8_t    *bytes;
			size_t		n;

			if (!raw || !json_object_is_type(raw, json_type_string))
			{
				outcome_fail(o, 400, "bad_request", "series %zu: sample %zu has no \"rawProfile\" string", i + 1, k + 1);
				ok = false;
				break;
			}
			text = json_object_get_string(raw);
			tlen = (size_t) json_object_get_string_len(raw);
			bytes = malloc(tlen / 4 * 3 + 3);
			if (!bytes)
			{
				outcome_fail(o, 503, "out_of_memory", "out of memory");
				ok = false;
				break;
			}
			if (!base64_decode(text, tlen, bytes, tlen / 4 * 3 + 3, &n))
			{
				free(bytes);
				outcome_fail(o, 400, "bad_request", "series %zu: sample %zu's rawProfile is not base64", i + 1, k + 1);
				ok = false;
				break;
			}
			ok = series_profile(r, &s, i, bytes, n, batch, o);
			free(bytes);
		}
		labelset_free(&s.labels);
	}
	json_object_put(root);
	return ok;
}

bool
ingest_push(const RequestInfo *r, const uint8_t *body, size_t len, StoreBatch *batch, Outcome *o)
{
	bool		json;

	if (!push_content_type(r->content_type, &json, o))
		return false;
	/* (a request without profiles stores nothing, and is a valid one) */
	return json ? decode_json(r, body, len, batch, o) : decode_proto(r, body, len, batch, o);
}
