/* ingest_pyroscope.c: Pyroscope's /ingest (ingest_pyroscope.h) */
#include "ingest_pyroscope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "folded.h"
#include "inflate.h"
#include "jfr.h"
#include "json_limits.h"
#include "multipart.h"
#include "payload.h"
#include "pprof_delta.h"
#include "pprof_scan.h"
#include "push_profile.h"
#include "pushed.h"
#include "pyroscope_name.h"

#define JSON_MAX_DEPTH 8
#define MAX_TYPE_CONFIGS 32

/* the parameters every format shares */
typedef struct IngestParams
{
	char		app[APP_NAME_MAX];
	LabelSet	tags;
	int64_t		from_ns;
	int64_t		until_ns;
	long		sample_rate;
	const char *spy_name;
	const char *aggregation;
} IngestParams;

/* sample_type_config: what the Go SDK says of each sample type */
typedef struct TypeConfig
{
	char		type[PPROF_TYPE_NAME_MAX];
	char		display_name[PPROF_TYPE_NAME_MAX];
	bool		cumulative;
} TypeConfig;

typedef struct TypeConfigs
{
	TypeConfig	items[MAX_TYPE_CONFIGS];
	int			n;
	bool		given;			/* false: Pyroscope's defaults apply */
} TypeConfigs;

/* Pyroscope's DefaultSampleTypeMapping, the part that names and accumulates */
static const TypeConfig default_configs[] = {
	{"samples", "cpu", false},
	{"alloc_objects", "", true},
	{"alloc_space", "", true},
	{"goroutine", "goroutines", false},
	{"contentions", "mutex_count", true},
	{"delay", "mutex_duration", true},
};

static const TypeConfig *
type_config(const TypeConfigs *c, const char *type)
{
	if (c->given)
	{
		for (int i = 0; i < c->n; i++)
			if (strcmp(c->items[i].type, type) == 0)
				return &c->items[i];
		return NULL;
	}
	for (size_t i = 0; i < sizeof(default_configs) / sizeof(default_configs[0]); i++)
		if (strcmp(default_configs[i].type, type) == 0)
			return &default_configs[i];
	return NULL;
}

static bool
is_cumulative(const char *type, void *arg)
{
	const TypeConfig *tc = type_config(arg, type);

	return tc && tc->cumulative;
}

static bool
parse_type_configs(const FormPart *part, TypeConfigs *c, Outcome *o)
{
	json_tokener *tok;
	json_object *root;

	memset(c, 0, sizeof(*c));
	if (!part)
		return true;
	if (!utf8_valid((const char *) part->data, part->len))
	{
		outcome_fail(o, 400, "bad_sample_type_config", "sample_type_config is not valid UTF-8 text");
		return false;
	}
	if (part->len > 65536 || !json_values_within((const char *) part->data, part->len, 1024))
	{
		outcome_fail(o, 400, "bad_sample_type_config", "sample_type_config is larger than 64 kB or 1024 values");
		return false;
	}
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok)
	{
		outcome_fail(o, 503, "out_of_memory", "out of memory");
		return false;
	}
	root = json_tokener_parse_ex(tok, (const char *) part->data, (int) part->len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
		tok->char_offset < (int) part->len || !json_object_is_type(root, json_type_object))
	{
		outcome_fail(o, 400, "bad_sample_type_config",
					 "sample_type_config is not a JSON object (of at most %d levels): %s", JSON_MAX_DEPTH,
					 json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(root);
		json_tokener_free(tok);
		return false;
	}
	json_tokener_free(tok);
	c->given = true;
	json_object_object_foreach(root, key, val)
	{
		TypeConfig *tc;
		json_object *field;

		if (c->n == MAX_TYPE_CONFIGS)
		{
			outcome_fail(o, 400, "bad_sample_type_config", "sample_type_config names more than %d sample types",
						 MAX_TYPE_CONFIGS);
			json_object_put(root);
			return false;
		}
		if (!json_object_is_type(val, json_type_object))
			continue;
		tc = &c->items[c->n++];
		snprintf(tc->type, sizeof(tc->type), "%s", key);
		if (json_object_object_get_ex(val, "display-name", &field) && json_object_is_type(field, json_type_string))
			snprintf(tc->display_name, sizeof(tc->display_name), "%s", json_object_get_string(field));
		if (json_object_object_get_ex(val, "cumulative", &field))
			tc->cumulative = json_object_get_boolean(field);
	}
	json_object_put(root);
	return true;
}

/*
 * The profile's name as Pyroscope names it from its sample types
 * (metricName in its pprof ingestion): wall, process_cpu, memory, mutex,
 * block, goroutines.
 */
static const char *
metric_name(const PprofSummary *s, const TypeConfigs *c)
{
	const char *st = "";

	for (int i = 0; i < s->nsample_types; i++)
		if (strcmp(s->type[i], "wall") == 0)
			return "wall";
	for (int i = 0; i < s->nsample_types; i++)
	{
		const TypeConfig *tc = type_config(c, s->type[i]);

		st = tc && tc->display_name[0] ? tc->display_name : s->type[i];
		if (strstr(st, "cpu"))
			return "process_cpu";
		if (strstr(st, "alloc_") || strstr(st, "inuse_") || strcmp(st, "space") == 0 || strcmp(st, "objects") == 0)
			return "memory";
		if (strstr(st, "mutex_"))
			return "mutex";
		if (strstr(st, "block_"))
			return "block";
		if (strstr(st, "goroutines"))
			return "goroutines";
	}
	return st;
}

/* the labels of every profile of the request */
static bool
base_labels(const RequestInfo *r, const IngestParams *p, const char *service, LabelSet *ls, Outcome *o)
{
	char		err[256];

	if (!labelset_copy(ls, &p->tags))
	{
		outcome_fail(o, 503, "out_of_memory", "out of memory");
		return false;
	}
	/* service_name from the application name, unless a tag gives it */
	if (labelset_get(ls, "service_name"))
	{
		if (!labelset_set(ls, "app_name", service, false, err, sizeof(err)))
			goto bad;
	}
	else if (!labelset_set(ls, "service_name", service, true, err, sizeof(err)))
		goto bad;
	if (!labelset_set(ls, "pyroscope_spy", p->spy_name, false, err, sizeof(err)))
		goto bad;
	return request_labels(r, ls, o);
bad:
	outcome_fail(o, 400, "bad_labels", "%s", err);
	return false;
}

static bool
ingest_pprof(const RequestInfo *r, const IngestParams *p, bool multipart, StoreBatch *batch, Outcome *o)
{
	Form		form;
	const FormPart *profile;
	const FormPart *prev;
	TypeConfigs configs;
	uint8_t    *plain = NULL;
	size_t		plain_len = 0;
	PprofSummary summary;
	LabelSet	labels;
	char		err[512];
	const char *name;

	if (multipart)
	{
		if (!multipart_parse(r->content_type, r->body, r->body_len, &form, err, sizeof(err)))
		{
			outcome_fail(o, 400, "bad_multipart", "%s", err);
			return false;
		}
		profile = form_part(&form, "profile");
		prev = form_part(&form, "prev_profile");
		if (!profile)
		{
			outcome_fail(o, 400, "bad_multipart", "the multipart body has no \"profile\" part");
			return false;
		}
		if (!parse_type_configs(form_part(&form, "sample_type_config"), &configs, o))
			return false;
	}
	else
	{
		memset(&configs, 0, sizeof(configs));
		profile = NULL;
		prev = NULL;
		if (!payload_plain(r->body, r->body_len, r->max_profile_size, "the profile", &plain, &plain_len, o))
			return false;
	}
	if (profile && !payload_plain(profile->data, profile->len, r->max_profile_size, "the profile", &plain, &plain_len, o))
		return false;
	if (prev && prev->len > 0)
	{
		uint8_t    *prev_plain = NULL;
		size_t		prev_len = 0;
		uint8_t    *delta = NULL;
		size_t		delta_len = 0;
		bool		ok;

		if (!payload_plain(prev->data, prev->len, r->max_profile_size, "prev_profile", &prev_plain, &prev_len, o))
		{
			free(plain);
			return false;
		}
		ok = pprof_subtract(plain, plain_len, prev_plain, prev_len, is_cumulative, &configs,
							r->max_profile_size, &delta, &delta_len, err, sizeof(err));
		free(prev_plain);
		free(plain);
		if (!ok)
		{
			outcome_fail(o, 400, "invalid_profile", "%s", err);
			return false;
		}
		plain = delta;
		plain_len = delta_len;
	}
	if (!pprof_scan(plain, plain_len, &summary, err, sizeof(err)))
	{
		free(plain);
		outcome_fail(o, 400, "invalid_profile", "%s", err);
		return false;
	}
	/*
	 * Profiles of old SDKs have no time, or one in microseconds (in 1970):
	 * Pyroscope takes `from` then.
	 */
	if (summary.time_nanos < (int64_t) 365 * 24 * 3600 * 1000000000LL &&
		!pprof_append_time(&plain, &plain_len, p->from_ns))
	{
		free(plain);
		outcome_fail(o, 503, "out_of_memory", "out of memory");
		return false;
	}
	name = metric_name(&summary, &configs);
	if (!base_labels(r, p, p->app, &labels, o))
	{
		free(plain);
		labelset_free(&labels);
		return false;
	}
	if (!*name)
	{
		free(plain);
		labelset_free(&labels);
		outcome_fail(o, 400, "invalid_profile", "the profile has no sample type");
		return false;
	}
	batch_add(batch, name, &labels, plain, plain_len, o);
	labelset_free(&labels);
	return o->reason == NULL;
}

/*
 * Folded stacks: the type is the last dot-separated part of the
 * application name (`myapp.cpu`, `myapp.alloc_space`), as Pyroscope's
 * convertMetadata reads it.
 */
typedef struct FoldedType
{
	const char *suffix;
	const char *metric;
	const char *type;			/* NULL: the suffix itself */
	const char *unit;
} FoldedType;

static const FoldedType folded_types[] = {
	{"cpu", "process_cpu", "samples", "count"},
	{"wall", "wall", "samples", "count"},
	{"inuse_objects", "memory", NULL, "count"},
	{"inuse_space", "memory", NULL, "bytes"},
	{"alloc_objects", "memory", NULL, "count"},
	{"alloc_space", "memory", NULL, "bytes"},
	{"goroutines", "goroutine", NULL, "count"},
	{"mutex_count", "mutex", "contentions", "count"},
	{"mutex_duration", "mutex", "delay", "nanoseconds"},
	{"block_count", "block", "contentions", "count"},
	{"block_duration", "block", "delay", "nanoseconds"},
	{"itimer", "process_cpu", "samples", "count"},
	{"alloc_in_new_tlab_objects", "memory", NULL, "count"},
	{"alloc_in_new_tlab_bytes", "memory", NULL, "bytes"},
	{"alloc_outside_tlab_objects", "memory", NULL, "count"},
	{"alloc_outside_tlab_bytes", "memory", NULL, "bytes"},
	{"lock_count", "block", "contentions", "count"},
	{"lock_duration", "block", "delay", "nanoseconds"},
	{"live", "memory", NULL, "count"},
	{"exceptions", "exceptions", "samples", "count"},
	{"seconds", "wall", "samples", "count"},
	{"nanoseconds", "wall", "samples", "count"},
	{"microseconds", "wall", "samples", "count"},
	{"milliseconds", "wall", "samples", "count"},
	{"bytes", "memory", "samples", "bytes"},
};

static bool
ingest_folded(const RequestInfo *r, const IngestParams *p, bool one_per_line, StoreBatch *batch, Outcome *o)
{
	char		service[APP_NAME_MAX];
	const char *dot = strrchr(p->app, '.');
	const char *suffix = dot ? dot + 1 : "cpu";
	const FoldedType *ft = NULL;
	FoldedMeta	meta;
	uint8_t    *pprof = NULL;
	size_t		pprof_len = 0;
	LabelSet	labels;
	char		err[512];

	snprintf(service, sizeof(service), "%.*s", dot ? (int) (dot - p->app) : (int) strlen(p->app), p->app);
	for (size_t i = 0; i < sizeof(folded_types) / sizeof(folded_types[0]); i++)
		if (strcmp(folded_types[i].suffix, suffix) == 0)
			ft = &folded_types[i];
	if (!ft)
	{
		outcome_fail(o, 400, "unknown_profile_type",
					 "unknown profile type \"%.64s\": the application name's last part after a dot names it "
					 "(myapp.cpu, myapp.wall, myapp.alloc_space, ...; docs/push.md)", suffix);
		return false;
	}
	memset(&meta, 0, sizeof(meta));
	meta.sample_type = ft->type ? ft->type : ft->suffix;
	meta.sample_unit = ft->unit;
	meta.time_nanos = p->from_ns;
	/* a sum over [from, until] is a delta profile; an average is a gauge */
	if (strcmp(p->aggregation, "average") != 0 && p->until_ns > p->from_ns)
		meta.duration_nanos = p->until_ns - p->from_ns;
	/* with a sample rate, counts become CPU or wall time, as Pyroscope makes them */
	if (p->sample_rate > 0 && (strcmp(ft->metric, "wall") == 0 || strcmp(ft->metric, "process_cpu") == 0))
	{
		meta.period = 1000000000 / p->sample_rate;
		meta.period_type = "cpu";
		meta.period_unit = "nanoseconds";
		meta.sample_type = strcmp(ft->metric, "wall") == 0 ? "wall" : "cpu";
		meta.sample_unit = "nanoseconds";
	}
	if (!folded_to_pprof(r->body, r->body_len, one_per_line, &meta, r->max_profile_size,
						 &pprof, &pprof_len, err, sizeof(err)))
	{
		outcome_fail(o, 400, "invalid_profile", "%s", err);
		return false;
	}
	if (!pprof)
		return true;			/* no stack with a count: nothing to store */
	if (!base_labels(r, p, service, &labels, o))
	{
		free(pprof);
		labelset_free(&labels);
		return false;
	}
	batch_add(batch, ft->metric, &labels, pprof, pprof_len, o);
	labelset_free(&labels);
	return o->reason == NULL;
}

static bool
ingest_jfr(const RequestInfo *r, const IngestParams *p, bool multipart, StoreBatch *batch, Outcome *o)
{
	const uint8_t *jfr = r->body;
	size_t		jfr_len = r->body_len;
	uint8_t    *plain = NULL;
	size_t		plain_len = 0;
	Form		form;
	PushedProfiles profiles = {0};
	PushLimits	limits = {r->max_profile_size, r->jfr_thread_labels};
	LabelSet	labels;
	char		err[512];
	bool		ok;

	labelset_init(&labels);
	if (multipart)
	{
		const FormPart *part;

		if (!multipart_parse(r->content_type, r->body, r->body_len, &form, err, sizeof(err)))
		{
			outcome_fail(o, 400, "bad_multipart", "%s", err);
			return false;
		}
		part = form_part(&form, "jfr");
		if (!part)
		{
			outcome_fail(o, 400, "bad_multipart", "the multipart body has no \"jfr\" part");
			return false;
		}
		jfr = part->data;
		jfr_len = part->len;
	}
	if (!payload_plain(jfr, jfr_len, r->max_profile_size, "the JFR recording", &plain, &plain_len, o))
		return false;
	if (!jfr_convert(plain, plain_len, &limits, &profiles, err, sizeof(err)))
	{
		free(plain);
		outcome_fail(o, 400, "invalid_jfr", "%s", err);
		return false;
	}
	free(plain);
	/* (a recording without the events read stores nothing, as in Pyroscope) */
	ok = base_labels(r, p, p->app, &labels, o) &&
		pushed_to_batch(r, &labels, &profiles, batch, o);
	labelset_free(&labels);
	push_profiles_free(&profiles);
	return ok;
}

bool
ingest_pyroscope(const RequestInfo *r, StoreBatch *batch, Outcome *o)
{
	IngestParams p;
	const char *v;
	const char *format = request_arg(r, "format");
	bool		multipart = is_multipart(r->content_type);
	char		err[512];
	bool		ok;

	memset(&p, 0, sizeof(p));
	labelset_init(&p.tags);
	if (!pyroscope_parse_name(request_arg(r, "name"), p.app, sizeof(p.app), &p.tags, err, sizeof(err)))
	{
		labelset_free(&p.tags);
		outcome_fail(o, 400, "bad_name", "name: %s", err);
		return false;
	}
	p.from_ns = p.until_ns = r->received_ns;
	if ((v = request_arg(r, "from")) && *v && !pyroscope_parse_time(v, r->received_ns, &p.from_ns))
	{
		labelset_free(&p.tags);
		outcome_fail(o, 400, "bad_time", "from: \"%.32s\" is not a time (Unix seconds, ms, µs or ns, or now-1h)", v);
		return false;
	}
	if ((v = request_arg(r, "until")) && *v && !pyroscope_parse_time(v, r->received_ns, &p.until_ns))
	{
		labelset_free(&p.tags);
		outcome_fail(o, 400, "bad_time", "until: \"%.32s\" is not a time (Unix seconds, ms, µs or ns, or now-1h)", v);
		return false;
	}
	/* as Pyroscope: a sample rate that is not a number means the default, 100 */
	p.sample_rate = 100;
	if ((v = request_arg(r, "sampleRate")) && *v)
	{
		char	   *end;
		long		rate = strtol(v, &end, 10);

		if (!*end && rate >= 0 && rate <= 1000000000)
			p.sample_rate = rate;
	}
	p.spy_name = (v = request_arg(r, "spyName")) && *v ? v : "unknown";
	p.aggregation = (v = request_arg(r, "aggregationType")) && *v ? v : "sum";

	if (!format)
		format = "";
	if (strcmp(format, "jfr") == 0)
		ok = ingest_jfr(r, &p, multipart, batch, o);
	else if (strcmp(format, "pprof") == 0 || multipart || (!*format && is_gzip(r->body, r->body_len)))
		ok = ingest_pprof(r, &p, multipart, batch, o);
	else if (strcmp(format, "lines") == 0)
		ok = ingest_folded(r, &p, true, batch, o);
	else if (!*format || strcmp(format, "groups") == 0 || strcmp(format, "folded") == 0)
		ok = ingest_folded(r, &p, false, batch, o);
	else
	{
		outcome_fail(o, 400, "unsupported_format",
					 "format \"%.32s\" is not supported: pprof, jfr, groups (the default), folded or lines", format);
		ok = false;
	}
	labelset_free(&p.tags);
	return ok;
}
