/*
 * scrape.h
 *		Pull mode: the background workers that scrape pprof HTTP targets.
 *
 * scrape_init() defines the parca.scrape_* settings and, when the library
 * is loaded through shared_preload_libraries, reserves the shared memory
 * that parca.targets reads.  The launcher (src/workers/) starts a worker
 * in each database where a scrape job is enabled.
 */
#ifndef PARCA_SCRAPE_H
#define PARCA_SCRAPE_H

extern void scrape_init(void);

/*
 * Whether the database has an enabled scrape job, and so needs a scrape
 * worker.  Connected to SPI, as a role that may read parca.scrape_jobs.
 */
extern bool scrape_jobs_enabled(void);

#endif							/* PARCA_SCRAPE_H */
