/*
 * partitions.h
 *		Time partitions of parca.samples: settings and the maintenance
 *		worker that keeps them (src/maintenance/partitions.c, sql/40_samples.sql).
 */
#ifndef PARCA_PARTITIONS_H
#define PARCA_PARTITIONS_H

/* Settings, and the worker when preloaded; called from _PG_init. */
extern void partitions_init(void);

/* parca.retention in seconds: raw rows older are dropped; 0 keeps them. */
extern int64 partitions_retention_seconds(void);

#endif							/* PARCA_PARTITIONS_H */
