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

#endif
