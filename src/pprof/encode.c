/*
 * encode.c
 *		Packing and gzipping pprof output.
 */
#include "postgres.h"

#include <zlib.h>

#include "utils/memutils.h"

#include "pprof/pprof.h"

bytea *
pprof_encode(const PprofMessage *msg)
{
	size_t		packed_len = perftools__profiles__profile__get_packed_size(msg);
	uint8_t    *packed = palloc_extended(Max(packed_len, 1), MCXT_ALLOC_HUGE);
	uLong		bound;
	bytea	   *out;
	z_stream	zs;

	perftools__profiles__profile__pack(msg, packed);

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
					 Z_DEFAULT_STRATEGY) != Z_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not initialize gzip compression")));
	bound = deflateBound(&zs, packed_len);
	if (!AllocSizeIsValid(VARHDRSZ + bound))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("pprof output of %zu bytes is too large for a bytea", packed_len)));
	out = palloc(VARHDRSZ + bound);
	zs.next_in = packed;
	zs.avail_in = (uInt) packed_len;
	zs.next_out = (Bytef *) VARDATA(out);
	zs.avail_out = (uInt) bound;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
	{
		deflateEnd(&zs);
		elog(ERROR, "gzip compression of pprof output failed");
	}
	SET_VARSIZE(out, VARHDRSZ + zs.total_out);
	deflateEnd(&zs);
	pfree(packed);
	return out;
}
