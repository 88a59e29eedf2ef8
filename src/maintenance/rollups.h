/*
 * rollups.h
 *		Settings of the hourly, daily and weekly rollups of parca.samples
 *		(sql/46_rollups.sql, docs/rollups.md).
 */
#ifndef PARCA_ROLLUPS_H
#define PARCA_ROLLUPS_H

#include "postgres.h"

/* parca.rollups: whether rollups are written (worker) and read (queries). */
extern bool parca_rollups;

/* Settings; called from _PG_init. */
extern void rollups_init(void);

#endif							/* PARCA_ROLLUPS_H */
