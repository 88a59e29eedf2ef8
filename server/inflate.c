/* inflate.c: gzip inflated within a limit (inflate.h) */
#include "inflate.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"

bool
is_gzip(const uint8_t *data, size_t len)
{
	return data && len >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

InflateResult
gunzip_bounded(const uint8_t *data, size_t len, size_t limit,
			   uint8_t **out, size_t *out_len)
{
	z_stream	zs;
	Buf			b;
	uint8_t		chunk[65536];
	InflateResult result = INFLATE_OK;
	int			rc;

	*out = NULL;
	*out_len = 0;
	if (!is_gzip(data, len))
		return INFLATE_INVALID;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return INFLATE_NOMEM;
	buf_init(&b, limit);
	zs.next_in = (Bytef *) data;
	/* zlib counts input in uInt: hand it over in pieces */
	zs.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt) len;
	size_t		left = len - zs.avail_in;

	for (;;)
	{
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
		{
			result = rc == Z_MEM_ERROR ? INFLATE_NOMEM : INFLATE_INVALID;
			break;
		}
		if (!buf_append(&b, chunk, sizeof(chunk) - zs.avail_out))
		{
			result = b.limit && b.len + (sizeof(chunk) - zs.avail_out) > b.limit ?
				INFLATE_TOO_LARGE : INFLATE_NOMEM;
			break;
		}
		if (zs.avail_in == 0 && left > 0)
		{
			zs.avail_in = left > UINT32_MAX ? UINT32_MAX : (uInt) left;
			left -= zs.avail_in;
		}
		if (rc == Z_STREAM_END)
		{
			/* another member may follow (gzip files may be concatenated) */
			if (zs.avail_in == 0 && left == 0)
				break;
			if (!is_gzip(zs.next_in, zs.avail_in) || inflateReset(&zs) != Z_OK)
			{
				result = INFLATE_INVALID;
				break;
			}
			continue;
		}
		if (rc == Z_BUF_ERROR && zs.avail_in == 0 && left == 0)
		{
			result = INFLATE_INVALID;	/* truncated */
			break;
		}
	}
	inflateEnd(&zs);
	if (result != INFLATE_OK)
	{
		buf_free(&b);
		return result;
	}
	*out = buf_release(&b, out_len);
	return *out ? INFLATE_OK : INFLATE_NOMEM;
}
