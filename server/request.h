/*
 * What flows through parca-server: a received request (RequestInfo), the
 * profiles it carries (StoreBatch), and how it ended (Outcome).
 */
#ifndef SERVER_REQUEST_H
#define SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "labels.h"
#include "metrics.h"

#define QUERY_MAX_ARGS 32

typedef struct QueryArg
{
	char	   *key;
	char	   *value;
} QueryArg;

typedef struct RequestInfo
{
	Endpoint	ep;
	char	   *path;
	QueryArg	args[QUERY_MAX_ARGS];
	int			nargs;
	bool		args_cut;		/* a parameter was longer than the server keeps, or one too many */
	char		cut_key[65];	/* the first one cut (its name's plain characters), "" if too many */
	char	   *content_type;	/* NULL when absent */
	char	   *content_encoding;
	char	   *tenant;			/* X-Scope-OrgID */
	const char *role;			/* the role to write as; NULL: the login role */
	const uint8_t *body;
	size_t		body_len;
	int64_t		received_ns;	/* wall clock at the request's start */
	size_t		max_profile_size;	/* bytes a profile may take decompressed */
	bool		jfr_thread_labels;	/* --jfr-thread-labels */
} RequestInfo;

/* whether a Content-Type names the media type (parameters after ';' aside) */
bool		media_type_is(const char *content_type, const char *type);

/* the value of query parameter key, or NULL */
const char *request_arg(const RequestInfo *r, const char *key);

typedef struct StoreItem
{
	char	   *name;			/* parca_ingest_pprof's name */
	char	   *labels_json;
	uint8_t    *data;			/* a pprof, gzipped or not */
	size_t		len;
} StoreItem;

typedef struct StoreBatch
{
	StoreItem  *items;
	size_t		n;
	size_t		cap;
} StoreBatch;

typedef struct Outcome
{
	int			status;			/* HTTP status */
	const char *reason;			/* why it failed, a fixed word for /metrics; NULL if it did not */
	char		message[1024];
	int			retry_after;	/* seconds, 0 for none */
	size_t		profiles;
	long long	rows;
} Outcome;

void		outcome_fail(Outcome *o, int status, const char *reason, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));

/*
 * Adds a profile to the batch: data (malloc'd) is the batch's from now on,
 * on failure too.  The labels are the request's (tenant) over the item's.
 */
bool		batch_add(StoreBatch *b, const char *name, const LabelSet *labels,
					  uint8_t *data, size_t len, Outcome *o);
void		batch_free(StoreBatch *b);

/*
 * The label that X-Scope-OrgID becomes, set over any label of that name a
 * client put in the profile itself.
 */
#define TENANT_LABEL "tenant"

/* the request's own labels (the tenant) over ls; false with o set */
bool		request_labels(const RequestInfo *r, LabelSet *ls, Outcome *o);

#endif
