/*
 * What the converters of pushed formats (JFR, OTLP) hand to the server: a
 * list of encoded pprof profiles, each with its profile name and labels, for
 * parca_ingest_pprof.  Plain C: no PostgreSQL headers.
 */
#ifndef SERVER_PUSH_PROFILE_H
#define SERVER_PUSH_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_budget.h"

typedef struct PushLabel
{
	char	   *name;
	char	   *value;
} PushLabel;

typedef struct PushedProfile
{
	char	   *name;			/* the `name` argument of parca_ingest_pprof, e.g. "process_cpu" */
	PushLabel  *labels;			/* labels of this profile beyond the request's own */
	size_t		nlabels;
	uint8_t    *pprof;			/* an encoded (uncompressed) pprof, malloc'd */
	size_t		pprof_len;
} PushedProfile;

typedef struct PushedProfiles
{
	PushedProfile *items;
	size_t		n;
} PushedProfiles;

typedef struct PushLimits
{
	size_t		max_bytes;		/* memory a conversion may take, its results included */
	bool		thread_labels;	/* JFR: a thread_name label on each sample (off: one series per thread) */
} PushLimits;

/* frees every item and its strings; p is left empty (NULL is allowed) */
void		push_profiles_free(PushedProfiles *p);

/*
 * Appends a profile: name and labels are copied, pprof is taken over (freed
 * here on failure).  False when out of memory.
 */
bool		push_profiles_add(PushedProfiles *p, const char *name, const PushLabel *labels,
							  size_t nlabels, uint8_t *pprof, size_t pprof_len);

/*
 * A conversion's memory, charged to its budget, and its first error: once
 * failed, allocations return NULL and later errors are not kept.
 */
typedef struct PushConv
{
	AllocBudget budget;
	size_t		limit;
	char	   *err;
	size_t		errlen;
	bool		failed;
	char		where[96];		/* the message's prefix: "JFR chunk 2 (at byte 8192)" */
} PushConv;

/* err must have room for errlen (> 0) bytes */
void		push_conv_init(PushConv *c, size_t limit, char *err, size_t errlen, const char *where);
void		push_fail(PushConv *c, const char *fmt,...) __attribute__((format(printf, 2, 3)));
void	   *push_alloc(PushConv *c, size_t size);	/* NULL with the error set */
void		push_free(PushConv *c, void *p);

/* an arena: zeroed memory from blocks charged to a budget, freed all at once */
typedef struct PushArena
{
	struct PushArena *next;
	size_t		used;
	size_t		cap;
	char		data[];
} PushArena;

void	   *push_arena_alloc(PushConv *c, PushArena **arena, size_t size);	/* NULL with the error set */
void		push_arena_free(PushConv *c, PushArena **arena);

/* code point c as UTF-8 at out (4 bytes of room); NUL, surrogates and values past U+10FFFF as U+FFFD */
size_t		push_utf8_put(char *out, uint32_t c);

#endif
