/*
 * Cumulative profiles sent with the previous one (the /ingest multipart
 * field prev_profile, from older Go SDKs): the difference is what happened
 * between the two, which is what Pyroscope stored.
 */
#ifndef SERVER_PPROF_DELTA_H
#define SERVER_PPROF_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* whether the values of sample type `type` count up over a program's life */
typedef bool (*CumulativeFn) (const char *type, void *arg);

/*
 * cur minus prev, both uncompressed pprof: samples are matched by their
 * frames (function, file, line, address of every location) and labels; the
 * values of cumulative sample types become differences (never below
 * zero: a counter that went back means the program restarted), the others
 * stay cur's; samples left with only zeros are dropped.  Decoding takes at
 * most memory_limit bytes.  *out is malloc'd.
 */
bool		pprof_subtract(const uint8_t *cur, size_t cur_len, const uint8_t *prev, size_t prev_len,
						   CumulativeFn cumulative, void *arg, size_t memory_limit,
						   uint8_t **out, size_t *out_len, char *err, size_t errlen);

#endif
