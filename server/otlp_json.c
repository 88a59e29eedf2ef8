/*
 * otlp_json.c: OTLP/JSON requests decoded (otlp_internal.h)
 *
 * json-c parses the request (its depth and its count of values bounded
 * first); its values then fill the structures protobuf-c generates from
 * otlp.proto, in an arena charged to the budget, so that the converter
 * reads a JSON request as it reads a protobuf one.
 */
#include "otlp_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json_limits.h"

#define JSON_MAX_DEPTH 64
#define JSON_BYTES_PER_VALUE 256	/* what json-c takes for a value, about, to bound it */

/* JSON: OTLP/JSON's mapping (lowerCamelCase names, the proto names too; 64-bit integers as strings or numbers) */

static json_object *
jget(json_object *obj, const char *camel, const char *snake)
{
	json_object *v = NULL;

	if (!obj || !json_object_is_type(obj, json_type_object))
		return NULL;
	if (json_object_object_get_ex(obj, camel, &v) && !json_object_is_type(v, json_type_null))
		return v;
	if (snake && json_object_object_get_ex(obj, snake, &v) && !json_object_is_type(v, json_type_null))
		return v;
	return NULL;
}

static bool
jint(Otlp *o, json_object *v, const char *what, int64_t *out, bool is_unsigned)
{
	*out = 0;
	if (!v)
		return true;
	if (json_object_is_type(v, json_type_int))
	{
		if (is_unsigned && json_object_get_int64(v) == INT64_MAX)
			*out = (int64_t) json_object_get_uint64(v);
		else
			*out = json_object_get_int64(v);
		return true;
	}
	if (json_object_is_type(v, json_type_string))
	{
		const char *s = json_object_get_string(v);
		char	   *end;

		if (*s)
		{
			if (is_unsigned && *s != '-')
				*out = (int64_t) strtoull(s, &end, 10);
			else
				*out = strtoll(s, &end, 10);
			if (!*end)
				return true;
		}
	}
	if (json_object_is_type(v, json_type_double))
	{
		double		d = json_object_get_double(v);

		/* (a double past int64's range may not be converted at all) */
		if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double) (int64_t) d)
		{
			*out = (int64_t) d;
			return true;
		}
	}
	push_fail(&o->conv, "%s is not an integer", what);
	return false;
}

static int32_t
jint32(Otlp *o, json_object *obj, const char *camel, const char *snake)
{
	int64_t		v;

	if (!jint(o, jget(obj, camel, snake), camel, &v, false))
		return 0;
	if (v < INT32_MIN || v > INT32_MAX)
	{
		push_fail(&o->conv, "%s (%" PRId64 ") is out of range", camel, v);
		return 0;
	}
	return (int32_t) v;
}

static int64_t
jint64(Otlp *o, json_object *obj, const char *camel, const char *snake, bool is_unsigned)
{
	int64_t		v;

	return jint(o, jget(obj, camel, snake), camel, &v, is_unsigned) ? v : 0;
}

/* the array at name (NULL and 0 when absent) */
static json_object *
jarr(Otlp *o, json_object *obj, const char *camel, const char *snake, size_t *n)
{
	json_object *a = jget(obj, camel, snake);

	*n = 0;
	if (!a)
		return NULL;
	if (!json_object_is_type(a, json_type_array))
	{
		push_fail(&o->conv, "%s is not an array", camel);
		return NULL;
	}
	*n = json_object_array_length(a);
	return a;
}

static char *
jstring(Otlp *o, json_object *v)
{
	const char *s;
	size_t		len;
	char	   *copy;

	if (!v)
		return (char *) protobuf_c_empty_string;
	if (!json_object_is_type(v, json_type_string))
	{
		push_fail(&o->conv, "a string field holds another JSON type");
		return NULL;
	}
	s = json_object_get_string(v);
	len = (size_t) json_object_get_string_len(v);
	copy = push_arena_alloc(&o->conv, &o->arena, len + 1);
	if (copy)
		memcpy(copy, s, len);
	return copy;
}

/* an array of int32 or int64 at name */
static void *
jints(Otlp *o, json_object *obj, const char *camel, const char *snake, size_t *n, bool wide, bool is_unsigned)
{
	json_object *a = jarr(o, obj, camel, snake, n);
	void	   *out;

	if (!a || *n == 0)
		return NULL;
	out = push_arena_alloc(&o->conv, &o->arena, *n * (wide ? 8 : 4));
	for (size_t i = 0; out && i < *n && !o->conv.failed; i++)
	{
		int64_t		v;

		if (!jint(o, json_object_array_get_idx(a, i), camel, &v, is_unsigned))
			return NULL;
		if (wide)
			((int64_t *) out)[i] = v;
		else if (v < INT32_MIN || v > INT32_MAX)
			push_fail(&o->conv, "an element of %s (%" PRId64 ") is out of range", camel, v);
		else
			((int32_t *) out)[i] = (int32_t) v;
	}
	return o->conv.failed ? NULL : out;
}

#define NEW(o, type, init) ({ type *m_ = push_arena_alloc(&(o)->conv, &(o)->arena, sizeof(type)); if (m_) init(m_); m_; })

/* an array of messages at name, each made by conv */
typedef void *(*ConvFn) (Otlp *o, json_object *v, int depth);

static void **
jmessages(Otlp *o, json_object *obj, const char *camel, const char *snake, size_t *n, ConvFn conv, int depth)
{
	json_object *a = jarr(o, obj, camel, snake, n);
	void	  **out;

	if (!a || *n == 0)
		return NULL;
	out = push_arena_alloc(&o->conv, &o->arena, *n * sizeof(void *));
	for (size_t i = 0; out && i < *n && !o->conv.failed; i++)
		out[i] = conv(o, json_object_array_get_idx(a, i), depth + 1);
	return o->conv.failed ? NULL : out;
}

static void *any_value_from_json(Otlp *o, json_object *v, int depth);

static void *
key_value_from_json(Otlp *o, json_object *v, int depth)
{
	KeyValue   *kv = NEW(o, KeyValue, parca__otlp__key_value__init);

	if (!kv)
		return NULL;
	kv->key = jstring(o, jget(v, "key", NULL));
	kv->key_strindex = jint32(o, v, "keyStrindex", "key_strindex");
	if (jget(v, "value", NULL))
		kv->value = any_value_from_json(o, jget(v, "value", NULL), depth + 1);
	return kv;
}

static void *
any_value_from_json(Otlp *o, json_object *v, int depth)
{
	AnyValue   *av = NEW(o, AnyValue, parca__otlp__any_value__init);
	json_object *x;

	if (!av)
		return NULL;
	if (depth > JSON_MAX_DEPTH)
	{
		push_fail(&o->conv, "attribute values nest deeper than %d", JSON_MAX_DEPTH);
		return NULL;
	}
	if ((x = jget(v, "stringValue", "string_value")))
	{
		av->value_case = PARCA__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		av->string_value = jstring(o, x);
	}
	else if ((x = jget(v, "boolValue", "bool_value")))
	{
		av->value_case = PARCA__OTLP__ANY_VALUE__VALUE_BOOL_VALUE;
		av->bool_value = json_object_get_boolean(x);
	}
	else if ((x = jget(v, "intValue", "int_value")))
	{
		av->value_case = PARCA__OTLP__ANY_VALUE__VALUE_INT_VALUE;
		jint(o, x, "intValue", &av->int_value, false);
	}
	else if ((x = jget(v, "doubleValue", "double_value")))
	{
		av->value_case = PARCA__OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE;
		av->double_value = json_object_get_double(x);
	}
	else if ((x = jget(v, "stringValueStrindex", "string_value_strindex")))
	{
		av->value_case = PARCA__OTLP__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
		av->string_value_strindex = jint32(o, v, "stringValueStrindex", "string_value_strindex");
	}
	/* arrays, key-value lists and bytes become no label: left out */
	return av;
}

static void *
value_type_from_json(Otlp *o, json_object *v)
{
	Parca__Otlp__ValueType *vt;

	if (!v)
		return NULL;
	vt = NEW(o, Parca__Otlp__ValueType, parca__otlp__value_type__init);
	if (vt)
	{
		vt->type_strindex = jint32(o, v, "typeStrindex", "type_strindex");
		vt->unit_strindex = jint32(o, v, "unitStrindex", "unit_strindex");
	}
	return vt;
}

static void *
sample_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Sample *s = NEW(o, Parca__Otlp__Sample, parca__otlp__sample__init);

	if (!s)
		return NULL;
	s->stack_index = jint32(o, v, "stackIndex", "stack_index");
	s->attribute_indices = jints(o, v, "attributeIndices", "attribute_indices", &s->n_attribute_indices, false, false);
	s->link_index = jint32(o, v, "linkIndex", "link_index");
	s->values = jints(o, v, "values", NULL, &s->n_values, true, false);
	s->timestamps_unix_nano = jints(o, v, "timestampsUnixNano", "timestamps_unix_nano",
									&s->n_timestamps_unix_nano, true, true);
	return s;
}

static void *
profile_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Profile *p = NEW(o, Parca__Otlp__Profile, parca__otlp__profile__init);

	if (!p)
		return NULL;
	p->sample_type = value_type_from_json(o, jget(v, "sampleType", "sample_type"));
	p->samples = (Parca__Otlp__Sample **) jmessages(o, v, "samples", NULL, &p->n_samples, sample_from_json, depth);
	p->time_unix_nano = (uint64_t) jint64(o, v, "timeUnixNano", "time_unix_nano", true);
	p->duration_nano = (uint64_t) jint64(o, v, "durationNano", "duration_nano", true);
	p->period_type = value_type_from_json(o, jget(v, "periodType", "period_type"));
	p->period = jint64(o, v, "period", NULL, false);
	p->attribute_indices = jints(o, v, "attributeIndices", "attribute_indices", &p->n_attribute_indices, false, false);
	return p;
}

static void *
scope_profiles_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__ScopeProfiles *sp = NEW(o, Parca__Otlp__ScopeProfiles, parca__otlp__scope_profiles__init);
	json_object *scope;

	if (!sp)
		return NULL;
	if ((scope = jget(v, "scope", NULL)))
	{
		sp->scope = NEW(o, Parca__Otlp__InstrumentationScope, parca__otlp__instrumentation_scope__init);
		if (!sp->scope)
			return NULL;
		sp->scope->name = jstring(o, jget(scope, "name", NULL));
		sp->scope->version = jstring(o, jget(scope, "version", NULL));
		sp->scope->attributes = (KeyValue **) jmessages(o, scope, "attributes", NULL, &sp->scope->n_attributes,
														key_value_from_json, depth);
	}
	sp->profiles = (Parca__Otlp__Profile **) jmessages(o, v, "profiles", NULL, &sp->n_profiles, profile_from_json, depth);
	return sp;
}

static void *
resource_profiles_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__ResourceProfiles *rp = NEW(o, Parca__Otlp__ResourceProfiles, parca__otlp__resource_profiles__init);
	json_object *res;

	if (!rp)
		return NULL;
	if ((res = jget(v, "resource", NULL)))
	{
		rp->resource = NEW(o, Parca__Otlp__Resource, parca__otlp__resource__init);
		if (!rp->resource)
			return NULL;
		rp->resource->attributes = (KeyValue **) jmessages(o, res, "attributes", NULL, &rp->resource->n_attributes,
														   key_value_from_json, depth);
	}
	rp->scope_profiles = (Parca__Otlp__ScopeProfiles **) jmessages(o, v, "scopeProfiles", "scope_profiles",
																   &rp->n_scope_profiles, scope_profiles_from_json, depth);
	return rp;
}

static void *
mapping_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Mapping *m = NEW(o, Parca__Otlp__Mapping, parca__otlp__mapping__init);

	if (!m)
		return NULL;
	m->memory_start = (uint64_t) jint64(o, v, "memoryStart", "memory_start", true);
	m->memory_limit = (uint64_t) jint64(o, v, "memoryLimit", "memory_limit", true);
	m->file_offset = (uint64_t) jint64(o, v, "fileOffset", "file_offset", true);
	m->filename_strindex = jint32(o, v, "filenameStrindex", "filename_strindex");
	return m;
}

static void *
line_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Line *l = NEW(o, Parca__Otlp__Line, parca__otlp__line__init);

	if (!l)
		return NULL;
	l->function_index = jint32(o, v, "functionIndex", "function_index");
	l->line = jint64(o, v, "line", NULL, false);
	l->column = jint64(o, v, "column", NULL, false);
	return l;
}

static void *
location_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Location *l = NEW(o, Parca__Otlp__Location, parca__otlp__location__init);

	if (!l)
		return NULL;
	l->mapping_index = jint32(o, v, "mappingIndex", "mapping_index");
	l->address = (uint64_t) jint64(o, v, "address", NULL, true);
	l->lines = (Parca__Otlp__Line **) jmessages(o, v, "lines", NULL, &l->n_lines, line_from_json, depth);
	return l;
}

static void *
function_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Function *f = NEW(o, Parca__Otlp__Function, parca__otlp__function__init);

	if (!f)
		return NULL;
	f->name_strindex = jint32(o, v, "nameStrindex", "name_strindex");
	f->system_name_strindex = jint32(o, v, "systemNameStrindex", "system_name_strindex");
	f->filename_strindex = jint32(o, v, "filenameStrindex", "filename_strindex");
	f->start_line = jint64(o, v, "startLine", "start_line", false);
	return f;
}

static void *
attribute_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__KeyValueAndUnit *a = NEW(o, Parca__Otlp__KeyValueAndUnit, parca__otlp__key_value_and_unit__init);

	if (!a)
		return NULL;
	a->key_strindex = jint32(o, v, "keyStrindex", "key_strindex");
	a->unit_strindex = jint32(o, v, "unitStrindex", "unit_strindex");
	if (jget(v, "value", NULL))
		a->value = any_value_from_json(o, jget(v, "value", NULL), depth + 1);
	return a;
}

static void *
stack_from_json(Otlp *o, json_object *v, int depth)
{
	Parca__Otlp__Stack *s = NEW(o, Parca__Otlp__Stack, parca__otlp__stack__init);

	if (s)
		s->location_indices = jints(o, v, "locationIndices", "location_indices", &s->n_location_indices, false, false);
	return s;
}

Request *
otlp_request_from_json(Otlp *o, const uint8_t *data, size_t len)
{
	json_tokener *tok;
	json_object *root;
	Request    *req;
	json_object *d;

	if (!json_values_within((const char *) data, len, o->conv.limit / JSON_BYTES_PER_VALUE))
	{
		push_fail(&o->conv, "the JSON request has too many values for the memory limit (%zu bytes)", o->conv.limit);
		return NULL;
	}
	tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!tok)
	{
		push_fail(&o->conv, "out of memory");
		return NULL;
	}
	root = json_tokener_parse_ex(tok, (const char *) data, (int) len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
		json_tokener_get_parse_end(tok) < len)
	{
		enum json_tokener_error e = json_tokener_get_error(tok);

		push_fail(&o->conv, "not a JSON request: %s at byte %zu",
			  e == json_tokener_success ? "text after the JSON value" :
			  e == json_tokener_continue ? "the text ends inside a value" : json_tokener_error_desc(e),
			  json_tokener_get_parse_end(tok));
		json_object_put(root);
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	if (!json_object_is_type(root, json_type_object))
	{
		json_object_put(root);
		push_fail(&o->conv, "the JSON request is not an object");
		return NULL;
	}
	req = NEW(o, Request, parca__otlp__export_profiles_service_request__init);
	if (req)
		req->resource_profiles = (Parca__Otlp__ResourceProfiles **)
			jmessages(o, root, "resourceProfiles", "resource_profiles", &req->n_resource_profiles,
					  resource_profiles_from_json, 0);
	if (req && (d = jget(root, "dictionary", NULL)))
	{
		Dictionary *dict = NEW(o, Dictionary, parca__otlp__profiles_dictionary__init);
		json_object *strs;
		size_t		n;

		req->dictionary = dict;
		if (dict)
		{
			dict->mapping_table = (Parca__Otlp__Mapping **)
				jmessages(o, d, "mappingTable", "mapping_table", &dict->n_mapping_table, mapping_from_json, 0);
			dict->location_table = (Parca__Otlp__Location **)
				jmessages(o, d, "locationTable", "location_table", &dict->n_location_table, location_from_json, 0);
			dict->function_table = (Parca__Otlp__Function **)
				jmessages(o, d, "functionTable", "function_table", &dict->n_function_table, function_from_json, 0);
			dict->attribute_table = (Parca__Otlp__KeyValueAndUnit **)
				jmessages(o, d, "attributeTable", "attribute_table", &dict->n_attribute_table, attribute_from_json, 0);
			dict->stack_table = (Parca__Otlp__Stack **)
				jmessages(o, d, "stackTable", "stack_table", &dict->n_stack_table, stack_from_json, 0);
			strs = jarr(o, d, "stringTable", "string_table", &n);
			if (strs && n)
			{
				dict->string_table = push_arena_alloc(&o->conv, &o->arena, n * sizeof(char *));
				dict->n_string_table = dict->string_table ? n : 0;
				for (size_t i = 0; i < dict->n_string_table && !o->conv.failed; i++)
					dict->string_table[i] = jstring(o, json_object_array_get_idx(strs, i));
			}
		}
	}
	json_object_put(root);
	return o->conv.failed ? NULL : req;
}
