/*
 * stacktrace.c
 *		The stacktrace type: I/O, comparison and hashing.
 *
 * Text form: location ids as 16 hex digits, leaf first, e.g.
 * {00a1b2c3d4e5f607,1122334455667788}.  parca_frames() (sql/35_frames.sql) turns
 * the ids into function names.  Comparison is by frames as unsigned
 * integers, leaf first, then by depth; it only has to be a total order
 * consistent with equality so that btree indexes, sorting and GROUP BY
 * work.
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "libpq/pqformat.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "types/stacktrace.h"
#include "types/valid_text.h"

PG_FUNCTION_INFO_V1(stacktrace_in);
PG_FUNCTION_INFO_V1(stacktrace_out);
PG_FUNCTION_INFO_V1(stacktrace_recv);
PG_FUNCTION_INFO_V1(stacktrace_send);
PG_FUNCTION_INFO_V1(stacktrace_eq);
PG_FUNCTION_INFO_V1(stacktrace_ne);
PG_FUNCTION_INFO_V1(stacktrace_lt);
PG_FUNCTION_INFO_V1(stacktrace_le);
PG_FUNCTION_INFO_V1(stacktrace_gt);
PG_FUNCTION_INFO_V1(stacktrace_ge);
PG_FUNCTION_INFO_V1(stacktrace_cmp);
PG_FUNCTION_INFO_V1(stacktrace_hash);
PG_FUNCTION_INFO_V1(stacktrace_hash_extended);
PG_FUNCTION_INFO_V1(stacktrace_depth);
PG_FUNCTION_INFO_V1(stacktrace_location_ids);

struct varlena *
stacktrace_from_frames(const uint64 *frames, int nframes)
{
	Size		len = (Size) nframes * sizeof(uint64);
	struct varlena *st = (struct varlena *) palloc(VARHDRSZ + len);

	SET_VARSIZE(st, VARHDRSZ + len);
	if (len > 0)
		memcpy(VARDATA(st), frames, len);
	return st;
}

static void
check_depth(int64 nframes)
{
	if (nframes > STACKTRACE_MAX_FRAMES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("stacktrace has %lld frames, more than the limit of %d",
						(long long) nframes, STACKTRACE_MAX_FRAMES)));
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

Datum
stacktrace_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	const char *p = str;
	uint64	   *frames;
	int			nframes = 0;
	int			capacity = 16;

	while (*p == ' ')
		p++;
	if (*p++ != '{')
		goto syntax_error;
	frames = palloc(capacity * sizeof(uint64));
	while (*p == ' ')
		p++;
	if (*p == '}')
		p++;
	else
	{
		for (;;)
		{
			uint64		id = 0;
			int			ndigits = 0;
			int			d;

			while (*p == ' ')
				p++;
			while ((d = hexval(*p)) >= 0)
			{
				if (ndigits++ == 16)
					goto syntax_error;
				id = (id << 4) | (uint64) d;
				p++;
			}
			if (ndigits == 0)
				goto syntax_error;
			check_depth(nframes + 1);
			if (nframes == capacity)
			{
				capacity *= 2;
				frames = repalloc(frames, capacity * sizeof(uint64));
			}
			frames[nframes++] = id;
			while (*p == ' ')
				p++;
			if (*p == ',')
			{
				p++;
				continue;
			}
			if (*p++ == '}')
				break;
			goto syntax_error;
		}
	}
	while (*p == ' ')
		p++;
	if (*p != '\0')
		goto syntax_error;
	PG_RETURN_POINTER(stacktrace_from_frames(frames, nframes));

syntax_error:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type stacktrace: %s", message_quote_cstring(str)),
			 errdetail("Expected location ids as hexadecimal numbers of up to 16 digits, leaf first, e.g. {00a1b2c3d4e5f607,1122334455667788}.")));
	PG_RETURN_NULL();
}

Datum
stacktrace_out(PG_FUNCTION_ARGS)
{
	struct varlena *st = PG_GETARG_STACKTRACE_P(0);
	int			n = stacktrace_nframes(st);
	char	   *out = palloc(3 + (Size) n * 17);
	char	   *p = out;

	*p++ = '{';
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			*p++ = ',';
		snprintf(p, 17, "%016" INT64_MODIFIER "x", stacktrace_frame(st, i));
		p += 16;
	}
	*p++ = '}';
	*p = '\0';
	PG_RETURN_CSTRING(out);
}

Datum
stacktrace_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int32		n = pq_getmsgint(buf, 4);
	uint64	   *frames;

	if (n < 0 || (int64) n * 8 > buf->len - buf->cursor)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid stacktrace: %d frames announced, %d bytes left",
						n, buf->len - buf->cursor)));
	check_depth(n);
	frames = palloc(Max(n, 1) * sizeof(uint64));
	for (int i = 0; i < n; i++)
		frames[i] = (uint64) pq_getmsgint64(buf);
	PG_RETURN_POINTER(stacktrace_from_frames(frames, n));
}

Datum
stacktrace_send(PG_FUNCTION_ARGS)
{
	struct varlena *st = PG_GETARG_STACKTRACE_P(0);
	int			n = stacktrace_nframes(st);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint32(&buf, n);
	for (int i = 0; i < n; i++)
		pq_sendint64(&buf, (int64) stacktrace_frame(st, i));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

static int
stacktrace_compare(struct varlena *a, struct varlena *b)
{
	return stacktrace_frames_compare(stacktrace_frames_ptr(a), stacktrace_nframes(a),
									 stacktrace_frames_ptr(b), stacktrace_nframes(b));
}

static bool
stacktrace_equal(struct varlena *a, struct varlena *b)
{
	Size		la = VARSIZE_ANY_EXHDR(a);

	return la == VARSIZE_ANY_EXHDR(b) &&
		memcmp(VARDATA_ANY(a), VARDATA_ANY(b), la) == 0;
}

#define STACKTRACE_ARGS \
	struct varlena *a = PG_GETARG_STACKTRACE_P(0); \
	struct varlena *b = PG_GETARG_STACKTRACE_P(1)

Datum
stacktrace_eq(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_BOOL(stacktrace_equal(a, b));
}

Datum
stacktrace_ne(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_BOOL(!stacktrace_equal(a, b));
}

Datum
stacktrace_lt(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_BOOL(stacktrace_compare(a, b) < 0);
}

Datum
stacktrace_le(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_BOOL(stacktrace_compare(a, b) <= 0);
}

Datum
stacktrace_gt(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_BOOL(stacktrace_compare(a, b) > 0);
}

Datum
stacktrace_ge(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_BOOL(stacktrace_compare(a, b) >= 0);
}

Datum
stacktrace_cmp(PG_FUNCTION_ARGS)
{
	STACKTRACE_ARGS;
	PG_RETURN_INT32(stacktrace_compare(a, b));
}

Datum
stacktrace_hash(PG_FUNCTION_ARGS)
{
	struct varlena *st = PG_GETARG_STACKTRACE_P(0);

	return hash_any((const unsigned char *) VARDATA_ANY(st), VARSIZE_ANY_EXHDR(st));
}

Datum
stacktrace_hash_extended(PG_FUNCTION_ARGS)
{
	struct varlena *st = PG_GETARG_STACKTRACE_P(0);

	return hash_any_extended((const unsigned char *) VARDATA_ANY(st),
							 VARSIZE_ANY_EXHDR(st), PG_GETARG_INT64(1));
}

Datum
stacktrace_depth(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(stacktrace_nframes(PG_GETARG_STACKTRACE_P(0)));
}

/* The frames as bigint[] (location ids), leaf first. */
Datum
stacktrace_location_ids(PG_FUNCTION_ARGS)
{
	struct varlena *st = PG_GETARG_STACKTRACE_P(0);
	int			n = stacktrace_nframes(st);
	Datum	   *elems = palloc(Max(n, 1) * sizeof(Datum));

	for (int i = 0; i < n; i++)
		elems[i] = Int64GetDatum((int64) stacktrace_frame(st, i));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
