/*
 * pprof.h
 *		Decoding and encoding of pprof profiles (profile.proto).
 *
 * pprof_decode() accepts gzipped or plain bytes, refuses a profile whose
 * decompressed bytes and decoded form together would take more than
 * limit bytes (parca.max_profile_size, passed by the caller), and validates every cross-reference (string
 * indexes, mapping, function and location ids, value counts) so that
 * callers can trust the message.  Every string is valid text in the
 * database encoding: one with a NUL or an invalid byte is repaired (each
 * such byte becomes U+FFFD, or '?' if the encoding is not UTF8), unless it
 * names series (a field of a profile type, a string label), which makes the
 * profile an error.  All memory comes from the current memory context;
 * errors are raised with ereport.
 */
#ifndef PARCA_PPROF_H
#define PARCA_PPROF_H

#include "postgres.h"

#include "pprof/profile.pb-c.h"

typedef Perftools__Profiles__Profile PprofMessage;
typedef struct PprofIdMap PprofIdMap;

typedef struct Pprof
{
	PprofMessage *msg;
	PprofIdMap *mappings;		/* id -> index into msg->mapping */
	PprofIdMap *functions;		/* id -> index into msg->function */
	PprofIdMap *locations;		/* id -> index into msg->location */
	bool	   *repaired;		/* per string: repaired; NULL if none was */
} Pprof;

extern Pprof *pprof_decode(const char *data, Size len, Size limit);

/* Index of the entry with this id, or -1.  Id 0 is never present. */
extern int	pprof_id_lookup(const PprofIdMap *map, uint64 id);

/* A validated string table entry. */
static inline const char *
pprof_string(const Pprof *p, int64 index)
{
	return p->msg->string_table[index];
}

/* Packs msg and gzips it into a new bytea. */
extern bytea *pprof_encode(const PprofMessage *msg);

#endif							/* PARCA_PPROF_H */
