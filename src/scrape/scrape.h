/*
 * scrape.h
 *		Pull mode: the background worker that scrapes pprof HTTP targets.
 *
 * scrape_init() defines the parca.scrape_* settings, reserves the shared
 * memory that parca.targets reads, and registers the worker when the
 * library is loaded through shared_preload_libraries.
 */
#ifndef PARCA_SCRAPE_H
#define PARCA_SCRAPE_H

extern void scrape_init(void);

#endif							/* PARCA_SCRAPE_H */
