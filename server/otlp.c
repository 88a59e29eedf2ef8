/*
 * otlp.c: OpenTelemetry profiles to pprof profiles (otlp.h)
 *
 * The request is decoded into the structures protobuf-c generates from
 * otlp.proto: from protobuf by protobuf-c (with an allocator charging the
 * budget), from OTLP/JSON by json-c into the same structures (in an arena
 * charged to the budget; otlp_json.c).  Each profile then becomes a pprof
 * through the profile builder, every index into the dictionary checked.
 */
#include "otlp_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids/ids.h"

#define MAX_LABELS 64			/* as parca-server allows */
#define MAX_LABEL_VALUE 1024
#define MAX_STACK 4096			/* frames, as parca_ingest_pprof allows */

/* conversion */

static const char *
str_at(Otlp *o, int32_t i, const char *what)
{
	if (i == 0)
		return "";
	if (i < 0 || (size_t) i >= o->dict->n_string_table)
	{
		push_fail(&o->conv, "%s refers to string %d, but the string table has %zu entries", what, i, o->dict->n_string_table);
		return NULL;
	}
	return o->dict->string_table[i] ? o->dict->string_table[i] : "";
}

/* text as valid UTF-8 of at most max bytes, into buf (max * 3 + 1 bytes) */
static void
clean_text(const char *s, char *buf, size_t max)
{
	size_t		n = 0;
	const uint8_t *end = (const uint8_t *) s + strlen(s);

	for (const uint8_t *p = (const uint8_t *) s; p < end;)
	{
		size_t		l = (size_t) parca_utf8_char_length(p, end - p);

		if (l == 0)
		{
			if (n + 3 > max)
				break;
			n += push_utf8_put(buf + n, 0xFFFD);
			p++;
			continue;
		}
		if (n + l > max)
			break;
		memcpy(buf + n, p, l);
		n += l;
		p += l;
	}
	buf[n] = 0;
}

/* a label name by Prometheus' rules: "service.name" is service_name */
static void
label_name(const char *key, char *buf, size_t size)
{
	size_t		n = 0;

	if (key[0] >= '0' && key[0] <= '9')
		buf[n++] = '_';
	for (const char *p = key; *p && n + 1 < size; p++)
	{
		char		c = *p;

		buf[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') ? c : '_';
	}
	buf[n] = 0;
}

/* an attribute's value as label text; false when it has none (arrays, lists, bytes, unset) */
static bool
value_text(Otlp *o, const AnyValue *v, char *buf, size_t size)
{
	char		tmp[64];
	const char *s = NULL;

	if (!v)
		return false;
	switch (v->value_case)
	{
		case PARCA__OTLP__ANY_VALUE__VALUE_STRING_VALUE:
			s = v->string_value;
			break;
		case PARCA__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
			s = str_at(o, v->string_value_strindex, "an attribute value");
			break;
		case PARCA__OTLP__ANY_VALUE__VALUE_BOOL_VALUE:
			s = v->bool_value ? "true" : "false";
			break;
		case PARCA__OTLP__ANY_VALUE__VALUE_INT_VALUE:
			snprintf(tmp, sizeof(tmp), "%" PRId64, v->int_value);
			s = tmp;
			break;
		case PARCA__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE:
			snprintf(tmp, sizeof(tmp), "%.17g", v->double_value);
			s = tmp;
			break;
		default:
			return false;
	}
	if (!s || !*s)
		return false;
	clean_text(s, buf, size);
	return true;
}

typedef struct LabelList
{
	PushLabel	items[MAX_LABELS];
	char		names[MAX_LABELS][256];
	char		values[MAX_LABELS][MAX_LABEL_VALUE * 3 + 1];
	size_t		n;
} LabelList;

/* name=value into the list, replacing a label of the same name */
static void
labels_set(LabelList *l, const char *name, const char *value)
{
	size_t		i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->names[i], name) == 0)
			break;
	if (i == MAX_LABELS)
		return;
	snprintf(l->names[i], sizeof(l->names[i]), "%s", name);
	snprintf(l->values[i], sizeof(l->values[i]), "%s", value);
	l->items[i].name = l->names[i];
	l->items[i].value = l->values[i];
	if (i == l->n)
		l->n++;
}

static void
labels_add_attributes(Otlp *o, LabelList *l, KeyValue *const *kvs, size_t n)
{
	char		name[256],
				value[MAX_LABEL_VALUE * 3 + 1];

	for (size_t i = 0; i < n && !o->conv.failed; i++)
	{
		const char *key = kvs[i]->key && *kvs[i]->key ? kvs[i]->key : str_at(o, kvs[i]->key_strindex, "an attribute key");

		if (!key || !*key || !value_text(o, kvs[i]->value, value, MAX_LABEL_VALUE))
			continue;
		label_name(key, name, sizeof(name));
		labels_set(l, name, value);
	}
}

/*
 * A field of a profile type as parca can name it: ':', '{', '}', '"', white
 * space and control characters (which a selector could not hold) as '_',
 * invalid UTF-8 repaired, at most 127 bytes.  "cpu time" is stored as
 * "cpu_time" rather than the request refused.
 */
static void
type_field(const char *s, char *buf, size_t size)
{
	clean_text(s, buf, (size - 1) / 3);
	for (char *c = buf; *c; c++)
		if (*c == ':' || *c == '{' || *c == '}' || *c == '"' || (unsigned char) *c <= ' ' || *c == 0x7f)
			*c = '_';
}

/* parca's name for a profile type: see docs/push.md ("OpenTelemetry profiles") */
static void
profile_name(const char *sample_type, const char *sample_unit, const char *period_type, char *buf, size_t size)
{
	if (strcmp(period_type, "cpu") == 0)
		snprintf(buf, size, "process_cpu");
	else if (strcmp(period_type, "space") == 0 || strcmp(sample_unit, "bytes") == 0)
		snprintf(buf, size, "memory");
	else if (strcmp(period_type, "wall") == 0)
		snprintf(buf, size, "wall");
	else if (*sample_type)
		label_name(sample_type, buf, size);
	else
		snprintf(buf, size, "otel");
}

static uint64_t
mapping_id(Otlp *o, ProfileBuilder *b, int32_t mi)
{
	const Parca__Otlp__Mapping *m;
	const char *file;

	if (mi == 0)
		return 0;
	if (mi < 0 || (size_t) mi >= o->dict->n_mapping_table || !o->dict->mapping_table[mi])
	{
		push_fail(&o->conv, "a location refers to mapping %d, but the mapping table has %zu entries", mi,
			  o->dict->n_mapping_table);
		return 0;
	}
	if (o->mapping_ids[mi])
		return o->mapping_ids[mi];
	m = o->dict->mapping_table[mi];
	file = str_at(o, m->filename_strindex, "a mapping's file name");
	if (!file)
		return 0;
	o->mapping_ids[mi] = pb_mapping(b, m->memory_start, m->memory_limit, m->file_offset, file, "");
	return o->mapping_ids[mi];
}

static uint64_t
function_id(Otlp *o, ProfileBuilder *b, int32_t fi)
{
	const Parca__Otlp__Function *f;
	const char *name,
			   *sys,
			   *file;

	if (fi < 0 || (size_t) fi >= o->dict->n_function_table || !o->dict->function_table[fi])
	{
		push_fail(&o->conv, "a line refers to function %d, but the function table has %zu entries", fi,
			  o->dict->n_function_table);
		return 0;
	}
	if (o->function_ids[fi])
		return o->function_ids[fi];
	f = o->dict->function_table[fi];
	name = str_at(o, f->name_strindex, "a function's name");
	sys = str_at(o, f->system_name_strindex, "a function's system name");
	file = str_at(o, f->filename_strindex, "a function's file name");
	if (!name || !sys || !file)
		return 0;
	o->function_ids[fi] = pb_function(b, name, sys, file, f->start_line);
	return o->function_ids[fi];
}

static uint64_t
location_id(Otlp *o, ProfileBuilder *b, int32_t li)
{
	const Parca__Otlp__Location *l;
	uint64_t	mapping;

	if (li < 0 || (size_t) li >= o->dict->n_location_table || !o->dict->location_table[li])
	{
		push_fail(&o->conv, "a stack refers to location %d, but the location table has %zu entries", li,
			  o->dict->n_location_table);
		return 0;
	}
	if (o->loc_ids[li])
		return o->loc_ids[li];
	l = o->dict->location_table[li];
	mapping = mapping_id(o, b, l->mapping_index);
	if (o->conv.failed)
		return 0;
	if (l->n_lines > o->cap_lines)
	{
		push_free(&o->conv, o->lines);
		o->lines = push_alloc(&o->conv, l->n_lines * sizeof(PbLine));
		o->cap_lines = o->lines ? l->n_lines : 0;
		if (!o->lines)
			return 0;
	}
	for (size_t i = 0; i < l->n_lines; i++)
	{
		o->lines[i].function_id = function_id(o, b, l->lines[i]->function_index);
		o->lines[i].line = l->lines[i]->line;
		if (!o->lines[i].function_id)
			return 0;
	}
	o->loc_ids[li] = pb_location(b, mapping, l->address, o->lines, l->n_lines);
	return o->loc_ids[li];
}

/* one OTLP profile into out, with the labels of its resource and scope */
static void
convert_profile(Otlp *o, const Parca__Otlp__Profile *p, const LabelList *base, PushedProfiles *out)
{
	ProfileBuilder *b = NULL;
	const char *st,
			   *su,
			   *pt = "",
			   *pu = "";
	char		stype[384],
				sunit[384],
				ptype[384],
				punit[384];
	char		name[128];
	LabelList  *labels = NULL;
	PbLabel    *slabels = NULL;
	char	  **num_text = NULL;
	uint8_t    *pprof;
	size_t		pprof_len;
	const Dictionary *d = o->dict;

	if (!p->sample_type)
	{
		push_fail(&o->conv, "a profile without a sample type");
		return;
	}
	st = str_at(o, p->sample_type->type_strindex, "a sample type");
	su = str_at(o, p->sample_type->unit_strindex, "a sample unit");
	if (p->period_type)
	{
		pt = str_at(o, p->period_type->type_strindex, "a period type");
		pu = str_at(o, p->period_type->unit_strindex, "a period unit");
	}
	if (!st || !su || !pt || !pu)
		return;
	type_field(st, stype, sizeof(stype));
	type_field(su, sunit, sizeof(sunit));
	type_field(pt, ptype, sizeof(ptype));
	type_field(pu, punit, sizeof(punit));
	profile_name(stype, sunit, ptype, name, sizeof(name));

	labels = push_alloc(&o->conv, sizeof(LabelList));
	b = pb_create_in(&o->conv.budget);
	o->loc_ids = push_alloc(&o->conv, (d->n_location_table + 1) * sizeof(uint64_t));
	o->mapping_ids = push_alloc(&o->conv, (d->n_mapping_table + 1) * sizeof(uint64_t));
	o->function_ids = push_alloc(&o->conv, (d->n_function_table + 1) * sizeof(uint64_t));
	slabels = push_alloc(&o->conv, MAX_LABELS * sizeof(PbLabel));
	if (!labels || !b || !o->loc_ids || !o->mapping_ids || !o->function_ids || !slabels)
	{
		push_fail(&o->conv, "out of memory");
		goto done;
	}
	memcpy(labels, base, sizeof(LabelList));
	for (size_t i = 0; i < labels->n; i++)
	{
		labels->items[i].name = labels->names[i];
		labels->items[i].value = labels->values[i];
	}
	memset(o->loc_ids, 0, (d->n_location_table + 1) * sizeof(uint64_t));
	memset(o->mapping_ids, 0, (d->n_mapping_table + 1) * sizeof(uint64_t));
	memset(o->function_ids, 0, (d->n_function_table + 1) * sizeof(uint64_t));

	/* the profile's own attributes are labels of its series too */
	for (size_t i = 0; i < p->n_attribute_indices && !o->conv.failed; i++)
	{
		int32_t		ai = p->attribute_indices[i];
		const Parca__Otlp__KeyValueAndUnit *a;
		const char *key;
		char		lname[256],
					value[MAX_LABEL_VALUE * 3 + 1];

		if (ai < 0 || (size_t) ai >= d->n_attribute_table || !d->attribute_table[ai])
		{
			push_fail(&o->conv, "a profile refers to attribute %d, but the attribute table has %zu entries", ai,
				  d->n_attribute_table);
			goto done;
		}
		a = d->attribute_table[ai];
		key = str_at(o, a->key_strindex, "an attribute key");
		if (key && *key && value_text(o, a->value, value, MAX_LABEL_VALUE))
		{
			label_name(key, lname, sizeof(lname));
			labels_set(labels, lname, value);
		}
	}

	pb_sample_type(b, stype, sunit);
	if (p->period_type)
		pb_period(b, ptype, punit, p->period);
	pb_time(b, (int64_t) (p->time_unix_nano & INT64_MAX), (int64_t) (p->duration_nano & INT64_MAX));

	for (size_t si = 0; si < p->n_samples && !o->conv.failed; si++)
	{
		const Parca__Otlp__Sample *s = p->samples[si];
		const Parca__Otlp__Stack *st;
		int64_t		value;
		size_t		nl = 0;

		if (s->n_values > 1)
		{
			push_fail(&o->conv, "sample %zu has %zu values; a profile has one sample type", si, s->n_values);
			goto done;
		}
		/* without a value, each timestamp is one occurrence */
		value = s->n_values == 1 ? s->values[0] : (int64_t) s->n_timestamps_unix_nano;
		if (value == 0)
			continue;
		if (s->stack_index < 0 || (size_t) s->stack_index >= d->n_stack_table || !d->stack_table[s->stack_index])
		{
			push_fail(&o->conv, "sample %zu refers to stack %d, but the stack table has %zu entries", si, s->stack_index,
				  d->n_stack_table);
			goto done;
		}
		st = d->stack_table[s->stack_index];
		if (st->n_location_indices > MAX_STACK)
		{
			push_fail(&o->conv, "sample %zu has a stack of %zu frames (at most %d)", si, st->n_location_indices, MAX_STACK);
			goto done;
		}
		if (!o->locs)
		{
			o->locs = push_alloc(&o->conv, MAX_STACK * sizeof(uint64_t));
			if (!o->locs)
				goto done;
		}
		for (size_t k = 0; k < st->n_location_indices; k++)
		{
			o->locs[k] = location_id(o, b, st->location_indices[k]);
			if (!o->locs[k])
			{
				if (!o->conv.failed)
					push_fail(&o->conv, "%s", pb_error(b) ? pb_error(b) : "a location could not be made");
				goto done;
			}
		}
		for (size_t k = 0; k < s->n_attribute_indices && nl < MAX_LABELS; k++)
		{
			int32_t		ai = s->attribute_indices[k];
			const Parca__Otlp__KeyValueAndUnit *a;
			const char *key;

			if (ai < 0 || (size_t) ai >= d->n_attribute_table || !d->attribute_table[ai])
			{
				push_fail(&o->conv, "sample %zu refers to attribute %d, but the attribute table has %zu entries", si, ai,
					  d->n_attribute_table);
				goto done;
			}
			a = d->attribute_table[ai];
			key = str_at(o, a->key_strindex, "an attribute key");
			if (!key || !*key || !a->value)
				continue;
			slabels[nl].key = key;
			slabels[nl].str = NULL;
			slabels[nl].num = 0;
			slabels[nl].num_unit = NULL;
			/* integers are numeric labels (no series of their own); strings string labels */
			if (a->value->value_case == PARCA__OTLP__ANY_VALUE__VALUE_INT_VALUE)
			{
				slabels[nl].num = a->value->int_value;
				slabels[nl].num_unit = str_at(o, a->unit_strindex, "an attribute unit");
				nl++;
			}
			else if (a->value->value_case == PARCA__OTLP__ANY_VALUE__VALUE_STRING_VALUE ||
					 a->value->value_case == PARCA__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX ||
					 a->value->value_case == PARCA__OTLP__ANY_VALUE__VALUE_BOOL_VALUE ||
					 a->value->value_case == PARCA__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE)
			{
				char	   *text = push_alloc(&o->conv, MAX_LABEL_VALUE * 3 + 1);

				if (!text)
					goto done;
				if (!value_text(o, a->value, text, MAX_LABEL_VALUE))
				{
					push_free(&o->conv, text);
					continue;
				}
				if (!num_text)
				{
					num_text = push_alloc(&o->conv, MAX_LABELS * sizeof(char *));
					if (!num_text)
					{
						push_free(&o->conv, text);
						goto done;
					}
					memset(num_text, 0, MAX_LABELS * sizeof(char *));
				}
				push_free(&o->conv, num_text[nl]);
				num_text[nl] = text;
				slabels[nl].str = text;
				nl++;
			}
		}
		if (o->conv.failed)
			goto done;
		if (!pb_sample(b, o->locs, st->n_location_indices, &value, slabels, nl))
		{
			push_fail(&o->conv, "%s", pb_error(b));
			goto done;
		}
	}
	if (o->conv.failed || pb_sample_count(b) == 0)
		goto done;
	if (!pb_encode(b, &pprof, &pprof_len))
	{
		push_fail(&o->conv, "%s", pb_error(b));
		goto done;
	}
	if (!push_profiles_add(out, name, labels->items, labels->n, pprof, pprof_len))
		push_fail(&o->conv, "out of memory");
done:
	if (num_text)
		for (size_t i = 0; i < MAX_LABELS; i++)
			push_free(&o->conv, num_text[i]);
	push_free(&o->conv, num_text);
	push_free(&o->conv, slabels);
	push_free(&o->conv, o->loc_ids);
	push_free(&o->conv, o->mapping_ids);
	push_free(&o->conv, o->function_ids);
	o->loc_ids = o->mapping_ids = o->function_ids = NULL;
	push_free(&o->conv, labels);
	pb_destroy(b);
}

static void
convert_request(Otlp *o, const Request *req, PushedProfiles *out)
{
	static const Dictionary empty = PARCA__OTLP__PROFILES_DICTIONARY__INIT;
	LabelList  *base = push_alloc(&o->conv, sizeof(LabelList));

	if (!base)
		return;
	o->dict = req->dictionary ? req->dictionary : &empty;
	for (size_t r = 0; r < req->n_resource_profiles && !o->conv.failed; r++)
	{
		const Parca__Otlp__ResourceProfiles *rp = req->resource_profiles[r];

		for (size_t s = 0; s < rp->n_scope_profiles && !o->conv.failed; s++)
		{
			const Parca__Otlp__ScopeProfiles *sp = rp->scope_profiles[s];

			base->n = 0;
			if (rp->resource)
				labels_add_attributes(o, base, rp->resource->attributes, rp->resource->n_attributes);
			if (sp->scope)
				labels_add_attributes(o, base, sp->scope->attributes, sp->scope->n_attributes);
			for (size_t p = 0; p < sp->n_profiles && !o->conv.failed; p++)
				convert_profile(o, sp->profiles[p], base, out);
		}
	}
	push_free(&o->conv, base);
}

bool
otlp_convert(const uint8_t *data, size_t len, bool json, const PushLimits *limits, PushedProfiles *out,
			 char *err, size_t errlen)
{
	Otlp	   *o;
	Request    *req;
	char		dummy[1];
	bool		ok;

	if (!err || errlen == 0)
	{
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!out || !limits || (!data && len))
	{
		snprintf(err, errlen, "OTLP profiles: no input, output or limits given");
		return false;
	}
	memset(out, 0, sizeof(*out));
	o = calloc(1, sizeof(Otlp));
	if (!o)
	{
		snprintf(err, errlen, "OTLP profiles: out of memory");
		return false;
	}
	push_conv_init(&o->conv, limits->max_bytes, err, errlen, "OTLP profiles");
	if (json)
		req = otlp_request_from_json(o, data ? data : (const uint8_t *) "", len);
	else
	{
		req = parca__otlp__export_profiles_service_request__unpack(&o->conv.budget.allocator, len, data);
		if (!req && o->conv.budget.exceeded)
			push_fail(&o->conv, "the request needs more memory than the limit (%zu bytes) to decode", o->conv.limit);
		else if (!req)
			push_fail(&o->conv, "not an ExportProfilesServiceRequest protocol buffer message, or a truncated one");
	}
	if (req && !o->conv.failed)
		convert_request(o, req, out);
	if (req && !json)
		parca__otlp__export_profiles_service_request__free_unpacked(req, &o->conv.budget.allocator);
	push_arena_free(&o->conv, &o->arena);
	push_free(&o->conv, o->locs);
	push_free(&o->conv, o->lines);
	ok = !o->conv.failed;
	free(o);
	if (!ok)
		push_profiles_free(out);
	return ok;
}
