/*
 * Gzip bodies inflated within a limit: a bomb stops at the limit, not at
 * the end of the memory.
 */
#ifndef SERVER_INFLATE_H
#define SERVER_INFLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum InflateResult
{
	INFLATE_OK,
	INFLATE_TOO_LARGE,			/* more than the limit once inflated */
	INFLATE_INVALID,			/* damaged or truncated */
	INFLATE_NOMEM
} InflateResult;

bool		is_gzip(const uint8_t *data, size_t len);

/* Inflates every gzip member of data into *out (malloc'd; the caller frees). */
InflateResult gunzip_bounded(const uint8_t *data, size_t len, size_t limit,
							 uint8_t **out, size_t *out_len);

#endif
