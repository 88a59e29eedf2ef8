/*
 * stacktrace.h
 *		The stacktrace type: an ordered list of location ids, leaf first.
 *
 * On disk and in memory a stacktrace is a varlena whose payload is the
 * frames as 64-bit location ids in host byte order, nothing else.  The
 * payload may be unaligned (short varlena headers), so frames are read
 * with memcpy via stacktrace_frame().  Binary send/recv use an int32
 * frame count followed by the frames as big-endian int64.
 */
#ifndef PARCA_STACKTRACE_H
#define PARCA_STACKTRACE_H

#include "postgres.h"
#include "fmgr.h"

/* Deepest stack the type accepts; deeper input is an error. */
#define STACKTRACE_MAX_FRAMES 4096

#define DatumGetStackTraceP(X)	((struct varlena *) PG_DETOAST_DATUM_PACKED(X))
#define PG_GETARG_STACKTRACE_P(n) DatumGetStackTraceP(PG_GETARG_DATUM(n))

static inline int
stacktrace_nframes(const struct varlena *st)
{
	return (int) (VARSIZE_ANY_EXHDR(st) / sizeof(uint64));
}

static inline const char *
stacktrace_frames_ptr(const struct varlena *st)
{
	return VARDATA_ANY(st);
}

static inline uint64
stacktrace_frame(const struct varlena *st, int i)
{
	uint64		id;

	memcpy(&id, VARDATA_ANY(st) + (Size) i * sizeof(uint64), sizeof(uint64));
	return id;
}

/*
 * <0, 0, >0 as frames a (na of them, unaligned) sort before, with, after
 * frames b: frame by frame as unsigned numbers, a stack before the stacks
 * it is a prefix of.  The stacktrace type's order, and a profile's.
 */
static inline int
stacktrace_frames_compare(const char *a, int na, const char *b, int nb)
{
	int			n = Min(na, nb);

	for (int i = 0; i < n; i++)
	{
		uint64		fa;
		uint64		fb;

		memcpy(&fa, a + (Size) i * sizeof(uint64), sizeof(uint64));
		memcpy(&fb, b + (Size) i * sizeof(uint64), sizeof(uint64));
		if (fa != fb)
			return fa < fb ? -1 : 1;
	}
	return (na > nb) - (na < nb);
}

/* A new stacktrace (palloc'd, 4-byte header) from frames leaf first. */
extern struct varlena *stacktrace_from_frames(const uint64 *frames, int nframes);

#endif							/* PARCA_STACKTRACE_H */
