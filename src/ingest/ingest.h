/*
 * ingest.h
 *		The ingest layer's face: what others (the scrape worker) need of
 *		parca_ingest_pprof() (src/ingest/ingest.c).
 */
#ifndef PARCA_INGEST_H
#define PARCA_INGEST_H

/* parca.max_profile_size: largest accepted profile, decompressed, in bytes. */
extern int	parca_max_profile_size;

/* parca.max_profile_size; called from _PG_init. */
extern void ingest_init(void);

#endif							/* PARCA_INGEST_H */
