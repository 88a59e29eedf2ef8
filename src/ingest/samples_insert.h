/*
 * samples_insert.h
 *		Appending the sample rows of one profile to parca.samples.
 *
 * The rows of one profile share time, period and duration.  They go
 * straight to the table's access method in batches, as COPY does, when
 * parca.samples is the plain table the extension made; when someone has
 * given it triggers, row-level security or another shape, they go through
 * an INSERT statement instead, so that all of those still apply.
 */
#ifndef PARCA_SAMPLES_INSERT_H
#define PARCA_SAMPLES_INSERT_H

#include "postgres.h"

#include "datatype/timestamp.h"

typedef struct SamplesInsert SamplesInsert;

/* Callers must be connected to SPI (the statement path uses it). */
extern SamplesInsert *samples_insert_begin(TimestampTz time, int64 period, int64 duration);

/* One row; num_labels is a jsonb datum, or 0 for NULL. */
extern void samples_insert_add(SamplesInsert *si, int64 series_id, Datum stack, int64 value,
							   Datum num_labels);

/* Writes what is left and ends; returns the number of rows added. */
extern int64 samples_insert_end(SamplesInsert *si);

#endif							/* PARCA_SAMPLES_INSERT_H */
