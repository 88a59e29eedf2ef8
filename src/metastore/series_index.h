/*
 * series_index.h
 *		The series index: series by label, and by the hours they have
 *		sample rows in (sql/31_series_index.sql; docs/data-model.md,
 *		"Finding series").
 *
 * Three tables and a GIN index on parca.series: the GIN index
 * (parca.series_label_keys) finds the series of a label value;
 * parca.label_values lists the values each profile type's labels have;
 * parca.series_hours and parca.label_hours say which series, and which
 * label values, got sample rows in each hour (UTC).  This module keeps
 * the tables: a trigger on parca.series notes the series written, a
 * callback of the columnar table access method notes the (hour, series)
 * of every row inserted into a partition of parca.samples, and before
 * the transaction commits the new entries are written, as the tables'
 * owner.  Readers (query/selector.c, query/discovery.c) read them through
 * series_index_access_begin/end.
 */
#ifndef PARCA_SERIES_INDEX_H
#define PARCA_SERIES_INDEX_H

#include "postgres.h"

#include "datatype/timestamp.h"

/* Start-up: the columnar callback and the transaction callbacks. */
extern void series_index_init(void);

/*
 * The key of one label of a series (parca.series_label_keys gives one per
 * label): a hash of the profile type, the label name and its value.
 */
extern int64 series_index_key(const char *profile_type, const char *name, const char *value);

/* The start of the hour (UTC) that holds t; infinite t stays as it is. */
extern TimestampTz series_index_hour(TimestampTz t);

/*
 * Whether the current user may have the index read on its behalf: it may
 * read parca.series (and parca.samples, when with_samples) and no
 * row-level security applies to it there, so that the index tells it
 * nothing those tables would not; and the tables exist (a database not
 * yet updated lacks them).  Otherwise readers take the tables themselves.
 * With samples also false where parca.samples is a Citus table: the index
 * has no hours of its rows there.
 */
extern bool series_index_readable(bool with_samples);

/*
 * Reading the index tables: from begin to end the current user is their
 * owner and the search_path pg_catalog (an error in between restores
 * both, as a transaction's abort does).
 */
typedef struct SeriesIndexAccess
{
	Oid			saved_user;
	int			saved_context;
	int			guc_level;
} SeriesIndexAccess;

extern void series_index_access_begin(SeriesIndexAccess *access);
extern void series_index_access_end(SeriesIndexAccess *access);

#endif							/* PARCA_SERIES_INDEX_H */
