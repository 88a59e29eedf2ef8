/*
 * scrape_internal.h
 *		What the files of the scrape worker share among themselves.
 *
 *	state.c		settings, shared memory (target states for parca.targets),
 *				the configuration-changed trigger
 *	scrape_worker.c	the worker's main loop: schedule, ingest, publish
 *	config.c	load the scrape configuration tables into ScrapeTargets
 *	file_sd.c	Prometheus file_sd files: watch, read, validate
 *	http.c		HTTP transfers through one libcurl multi handle
 *	yaml.c		import of a Parca configuration file
 */
#ifndef PARCA_SCRAPE_INTERNAL_H
#define PARCA_SCRAPE_INTERNAL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"

/* The role the worker stores profiles as (sql/80_scrape.sql). */
#define SCRAPE_WORKER_ROLE "parca_scrape_worker"

/* Settings (state.c). */
typedef enum ScrapeRedirects
{
	SCRAPE_REDIRECTS_NONE,
	SCRAPE_REDIRECTS_SAME_ORIGIN,	/* the target's scheme, host and port */
	SCRAPE_REDIRECTS_ANY
} ScrapeRedirects;

extern bool scrape_enabled;
extern int	scrape_redirects;
extern int	scrape_concurrency;
extern int	scrape_max_targets;

typedef enum ScrapeHealth
{
	SCRAPE_HEALTH_UNKNOWN = 0,
	SCRAPE_HEALTH_UP,
	SCRAPE_HEALTH_DOWN
} ScrapeHealth;

struct ScrapeTransfer;

/*
 * One thing to scrape: a profile endpoint of a target of a job.  The
 * configuration part comes from config.c; the rest is the worker's.
 */
typedef struct ScrapeTarget
{
	/* configuration */
	char	   *job;
	char	   *url;
	char	   *profile_name;	/* __name__: memory, process_cpu, ... */
	char	   *labels;			/* JSON object text: the series' labels */
	int64		interval_ms;
	int64		timeout_ms;

	/* schedule */
	TimestampTz next_due;
	bool		due;			/* waiting for a free transfer slot */
	struct ScrapeTransfer *transfer;	/* in flight, or NULL */

	/* outcome of the last scrape */
	ScrapeHealth health;
	TimestampTz last_scrape;
	int64		last_duration_us;
	char		last_error[256];
	bool		store_alone;	/* its last profile failed to store */

	int			slot;			/* index in shared memory, -1 if none */
} ScrapeTarget;

/* state.c: shared memory */
extern void scrape_state_attach_worker(void);
extern void scrape_state_publish_all(ScrapeTarget *targets, int ntargets);
extern void scrape_state_publish(const ScrapeTarget *target);

/* config.c */
extern ScrapeTarget *scrape_config_load(int *ntargets, MemoryContext cxt);

/* file_sd.c: within one configuration load, begin, targets..., end */
extern void file_sd_begin_load(void);
extern char *file_sd_targets(const char *job, List *patterns);
extern void file_sd_end_load(void);
extern bool file_sd_changed(void);

/* http.c */
typedef struct ScrapeTransfer ScrapeTransfer;

extern void scrape_http_init(void);
extern int	scrape_http_running(void);
/* max_bytes: parca.max_profile_size, the bound of a response and of all buffers */
extern void scrape_http_start(ScrapeTarget *target, size_t max_bytes);
extern void scrape_http_retarget(ScrapeTransfer *transfer, ScrapeTarget *target);
extern void scrape_http_cancel(ScrapeTarget *target);
extern void scrape_http_wait(int timeout_ms);
typedef struct ScrapeResult
{
	struct varlena *body;		/* the whole response as a bytea, or NULL */
	char		error[256];		/* why there is no body */
	int64		duration_us;
	size_t		buffered;		/* bytes of the body's buffer */
} ScrapeResult;

extern ScrapeTarget *scrape_http_next_done(ScrapeResult *result);
extern void scrape_http_result_free(ScrapeResult *result);

#endif							/* PARCA_SCRAPE_INTERNAL_H */
