/*
 * location.c
 *		The location type: one frame with its mapping and lines, as a value.
 *
 * The metastore stores locations normalized (parca.locations refers to
 * parca.functions and parca.mappings); a location value carries all of it
 * inline, so that a frame can be read, passed around and registered as
 * one thing.  parca_location(id) makes one from the metastore and
 * parca_register_location(location) stores one and returns its id.
 *
 * Text form, JSON:
 *   {"address": "0x4a1b2c", "build_id": "ab12", "file": "/usr/bin/app", "folded": false,
 *    "lines": [{"function": "main.fib", "system_name": "main.fib",
 *               "filename": "/src/main.go", "line": 12, "start_line": 10}, ...]}
 * lines innermost (inlined) first.  Binary form: int64 address, bool
 * folded, text build_id, text file, int32 nlines, then per line text
 * function, text system_name, text filename, int64 line, int64 start_line.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "ids/ids.h"
#include "metastore/metastore.h"
#include "types/valid_text.h"

PG_FUNCTION_INFO_V1(location_in);
PG_FUNCTION_INFO_V1(location_out);
PG_FUNCTION_INFO_V1(location_recv);
PG_FUNCTION_INFO_V1(location_send);
PG_FUNCTION_INFO_V1(parca_register_location);

typedef struct LocationLine
{
	char	   *function;
	char	   *system_name;
	char	   *filename;
	int64		line;
	int64		start_line;
} LocationLine;

typedef struct Location
{
	uint64		address;
	bool		folded;
	char	   *build_id;
	char	   *file;
	int			nlines;
	LocationLine *lines;
} Location;

/* Serialized: address, folded, nlines, then NUL-terminated strings and line numbers. */
static void
put_str(StringInfo buf, const char *s)
{
	appendBinaryStringInfo(buf, s, strlen(s) + 1);
}

static struct varlena *
location_serialize(const Location *loc)
{
	StringInfoData buf;
	uint8		folded = loc->folded;
	int32		nlines = loc->nlines;

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	appendBinaryStringInfo(&buf, (const char *) &loc->address, 8);
	appendBinaryStringInfo(&buf, (const char *) &folded, 1);
	appendBinaryStringInfo(&buf, (const char *) &nlines, 4);
	put_str(&buf, loc->build_id);
	put_str(&buf, loc->file);
	for (int i = 0; i < loc->nlines; i++)
	{
		appendBinaryStringInfo(&buf, (const char *) &loc->lines[i].line, 8);
		appendBinaryStringInfo(&buf, (const char *) &loc->lines[i].start_line, 8);
		put_str(&buf, loc->lines[i].function);
		put_str(&buf, loc->lines[i].system_name);
		put_str(&buf, loc->lines[i].filename);
	}
	SET_VARSIZE(buf.data, buf.len);
	return (struct varlena *) buf.data;
}

typedef struct Cursor
{
	const char *p;
	const char *end;
} Cursor;

static void
take(Cursor *c, void *dst, Size n)
{
	if ((Size) (c->end - c->p) < n)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid location value: truncated")));
	memcpy(dst, c->p, n);
	c->p += n;
}

static char *
take_str(Cursor *c)
{
	const char *nul = memchr(c->p, '\0', c->end - c->p);
	char	   *s;

	if (nul == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid location value: unterminated string")));
	s = pstrdup(c->p);
	c->p = nul + 1;
	return s;
}

static Location *
location_deserialize(const struct varlena *v)
{
	Location   *loc = palloc0(sizeof(Location));
	Cursor		c = {VARDATA_ANY(v), VARDATA_ANY(v) + VARSIZE_ANY_EXHDR(v)};
	uint8		folded;
	int32		nlines;

	take(&c, &loc->address, 8);
	take(&c, &folded, 1);
	take(&c, &nlines, 4);
	if (nlines < 0 || nlines > (c.end - c.p) / 16)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid location value: bad line count")));
	loc->folded = folded != 0;
	loc->nlines = nlines;
	loc->build_id = take_str(&c);
	loc->file = take_str(&c);
	loc->lines = palloc0(Max(nlines, 1) * sizeof(LocationLine));
	for (int i = 0; i < nlines; i++)
	{
		take(&c, &loc->lines[i].line, 8);
		take(&c, &loc->lines[i].start_line, 8);
		loc->lines[i].function = take_str(&c);
		loc->lines[i].system_name = take_str(&c);
		loc->lines[i].filename = take_str(&c);
	}
	return loc;
}

/* --- text I/O ----------------------------------------------------------- */

static void
bad_location(const char *text, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type location: %s", message_quote_cstring(text)),
			 errdetail("%s", why),
			 errhint("Write a JSON object such as {\"address\": \"0x4a1b2c\", \"build_id\": \"ab12\", \"file\": \"/usr/bin/app\", \"lines\": [{\"function\": \"main\", \"filename\": \"main.c\", \"line\": 12}]}.")));
}

static JsonbValue *
object_field(JsonbContainer *obj, const char *key)
{
	return getKeyJsonValueFromContainer(obj, key, strlen(key), NULL);
}

static char *
string_field(JsonbContainer *obj, const char *key, const char *text)
{
	JsonbValue *v = object_field(obj, key);

	if (v == NULL || v->type == jbvNull)
		return "";
	if (v->type != jbvString)
		bad_location(text, psprintf("\"%s\" must be a string", key));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

static int64
int_field(JsonbContainer *obj, const char *key, const char *text)
{
	JsonbValue *v = object_field(obj, key);

	if (v == NULL || v->type == jbvNull)
		return 0;
	if (v->type != jbvNumeric)
		bad_location(text, psprintf("\"%s\" must be a number", key));
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
}

/*
 * text as jsonb.  The JSON parser's error detail quotes the bad token,
 * which may be all of a long text: it is shown cut short.
 */
static Jsonb *
location_json(const char *text)
{
	MemoryContext cxt = CurrentMemoryContext;
	Jsonb	   *j = NULL;

	PG_TRY();
	{
		j = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_INVALID_TEXT_REPRESENTATION)
			PG_RE_THROW();
		FlushErrorState();
		bad_location(text, psprintf("It is not JSON: %s",
									edata->detail ? message_quote_cstring(edata->detail) : edata->message));
	}
	PG_END_TRY();
	return j;
}

Datum
location_in(PG_FUNCTION_ARGS)
{
	char	   *text = PG_GETARG_CSTRING(0);
	Jsonb	   *j = location_json(text);
	Location	loc;
	JsonbValue *v;

	if (!JB_ROOT_IS_OBJECT(j))
		bad_location(text, "A location is a JSON object.");
	memset(&loc, 0, sizeof(loc));
	v = object_field(&j->root, "address");
	if (v != NULL && v->type == jbvString)
	{
		char	   *s = pnstrdup(v->val.string.val, v->val.string.len);
		char	   *end;

		errno = 0;
		loc.address = strtoull(s, &end, 0);
		if (errno != 0 || *end != '\0' || end == s)
			bad_location(text, "\"address\" must be a number or a string such as \"0x4a1b2c\".");
	}
	else
		loc.address = (uint64) int_field(&j->root, "address", text);
	loc.build_id = string_field(&j->root, "build_id", text);
	loc.file = string_field(&j->root, "file", text);
	v = object_field(&j->root, "folded");
	loc.folded = v != NULL && v->type == jbvBool && v->val.boolean;
	v = object_field(&j->root, "lines");
	if (v != NULL && v->type != jbvNull)
	{
		JsonbIterator *it;
		JsonbValue	elem;
		JsonbIteratorToken tok;

		if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
			bad_location(text, "\"lines\" must be an array of objects.");
		loc.lines = palloc0(Max(JsonContainerSize(v->val.binary.data), 1) * sizeof(LocationLine));
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &elem, true)) != WJB_DONE)
		{
			LocationLine *l;

			if (tok != WJB_ELEM)
				continue;
			if (elem.type != jbvBinary || !JsonContainerIsObject(elem.val.binary.data))
				bad_location(text, "each of \"lines\" must be an object.");
			l = &loc.lines[loc.nlines++];
			l->function = string_field(elem.val.binary.data, "function", text);
			l->system_name = string_field(elem.val.binary.data, "system_name", text);
			l->filename = string_field(elem.val.binary.data, "filename", text);
			l->line = int_field(elem.val.binary.data, "line", text);
			l->start_line = int_field(elem.val.binary.data, "start_line", text);
		}
	}
	PG_RETURN_POINTER(location_serialize(&loc));
}

static void
json_key_str(StringInfo buf, const char *key, const char *value, bool comma)
{
	if (comma)
		appendStringInfoString(buf, ", ");
	escape_json(buf, key);
	appendStringInfoString(buf, ": ");
	escape_json(buf, value);
}

Datum
location_out(PG_FUNCTION_ARGS)
{
	Location   *loc = location_deserialize(PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(0)));
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "{\"address\": \"0x%" INT64_MODIFIER "x\"", loc->address);
	json_key_str(&buf, "build_id", loc->build_id, true);
	json_key_str(&buf, "file", loc->file, true);
	if (loc->folded)
		appendStringInfoString(&buf, ", \"folded\": true");
	appendStringInfoString(&buf, ", \"lines\": [");
	for (int i = 0; i < loc->nlines; i++)
	{
		LocationLine *l = &loc->lines[i];

		appendStringInfoString(&buf, i > 0 ? ", {" : "{");
		json_key_str(&buf, "function", l->function, false);
		json_key_str(&buf, "system_name", l->system_name, true);
		json_key_str(&buf, "filename", l->filename, true);
		appendStringInfo(&buf, ", \"line\": " INT64_FORMAT ", \"start_line\": " INT64_FORMAT "}",
						 l->line, l->start_line);
	}
	appendStringInfoString(&buf, "]}");
	PG_RETURN_CSTRING(buf.data);
}

/* --- binary I/O --------------------------------------------------------- */

static char *
getmsgtext(StringInfo buf)
{
	int32		len = pq_getmsgint(buf, 4);

	if (len < 0 || len > buf->len - buf->cursor)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid location: bad string length %d", len)));
	return pq_getmsgtext(buf, len, &len);
}

static void
sendtext(StringInfo buf, const char *s)
{
	pq_sendint32(buf, strlen(s));
	pq_sendtext(buf, s, strlen(s));
}

Datum
location_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	Location	loc;

	loc.address = (uint64) pq_getmsgint64(buf);
	loc.folded = pq_getmsgbyte(buf) != 0;
	loc.build_id = getmsgtext(buf);
	loc.file = getmsgtext(buf);
	loc.nlines = pq_getmsgint(buf, 4);
	if (loc.nlines < 0 || loc.nlines > (buf->len - buf->cursor) / 28)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid location: bad line count %d", loc.nlines)));
	loc.lines = palloc0(Max(loc.nlines, 1) * sizeof(LocationLine));
	for (int i = 0; i < loc.nlines; i++)
	{
		loc.lines[i].function = getmsgtext(buf);
		loc.lines[i].system_name = getmsgtext(buf);
		loc.lines[i].filename = getmsgtext(buf);
		loc.lines[i].line = pq_getmsgint64(buf);
		loc.lines[i].start_line = pq_getmsgint64(buf);
	}
	PG_RETURN_POINTER(location_serialize(&loc));
}

Datum
location_send(PG_FUNCTION_ARGS)
{
	Location   *loc = location_deserialize(PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(0)));
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, (int64) loc->address);
	pq_sendbyte(&buf, loc->folded ? 1 : 0);
	sendtext(&buf, loc->build_id);
	sendtext(&buf, loc->file);
	pq_sendint32(&buf, loc->nlines);
	for (int i = 0; i < loc->nlines; i++)
	{
		sendtext(&buf, loc->lines[i].function);
		sendtext(&buf, loc->lines[i].system_name);
		sendtext(&buf, loc->lines[i].filename);
		pq_sendint64(&buf, loc->lines[i].line);
		pq_sendint64(&buf, loc->lines[i].start_line);
	}
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/*
 * parca_register_location(location) → bigint: stores the location (and
 * its mapping and functions) unless known, returns its id.  The address
 * must already be normalized to the file.
 */
Datum
parca_register_location(PG_FUNCTION_ARGS)
{
	Location   *loc = location_deserialize(PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(0)));
	bool		has_mapping = loc->build_id[0] != '\0' || loc->file[0] != '\0';
	MetaMapping mapping = {parca_mapping_id(loc->build_id, loc->file), loc->build_id, loc->file};
	MetaFunction *functions = palloc(Max(loc->nlines, 1) * sizeof(MetaFunction));
	uint64	   *function_ids = palloc(Max(loc->nlines, 1) * sizeof(uint64));
	int64	   *lines = palloc(Max(loc->nlines, 1) * sizeof(int64));
	MetaLocation ml;

	for (int i = 0; i < loc->nlines; i++)
	{
		LocationLine *l = &loc->lines[i];

		functions[i].name = l->function;
		functions[i].system_name = l->system_name;
		functions[i].filename = l->filename;
		functions[i].start_line = l->start_line;
		functions[i].id = parca_function_id(l->function, l->system_name, l->filename, l->start_line);
		function_ids[i] = functions[i].id;
		lines[i] = l->line;
	}
	ml.has_mapping = has_mapping;
	ml.mapping_id = has_mapping ? mapping.id : 0;
	ml.address = loc->address;
	ml.is_folded = loc->folded;
	ml.nlines = loc->nlines;
	ml.function_ids = function_ids;
	ml.lines = lines;
	ml.id = parca_location_id(ml.mapping_id, loc->build_id[0] != '\0', ml.address,
							  ml.nlines, function_ids, lines);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	metastore_register(&mapping, has_mapping ? 1 : 0, functions, loc->nlines, &ml, 1);
	SPI_finish();
	PG_RETURN_INT64((int64) ml.id);
}
