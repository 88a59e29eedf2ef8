/*
 * series_index_internal.h
 *		Between the files of the series index (series_index.c: what is
 *		noted and when; series_index_write.c: the statements;
 *		series_index_keys.c: the keys); nothing outside src/metastore/
 *		uses it.
 */
#ifndef PARCA_SERIES_INDEX_INTERNAL_H
#define PARCA_SERIES_INDEX_INTERNAL_H

#include "postgres.h"

#include "commands/trigger.h"
#include "datatype/timestamp.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"

typedef struct IndexTables
{
	bool		looked_up;
	bool		present;		/* all of them: this database is updated */
	Oid			series;
	Oid			samples;
	Oid			label_values;
	Oid			series_hours;
	Oid			label_hours;
	Oid			owner;
} IndexTables;

typedef struct HourSeries
{
	TimestampTz hour;
	int64		series_id;
} HourSeries;

typedef struct PendingPair
{
	HourSeries	pair;			/* hash key */
	int			nest_level;
} PendingPair;

typedef struct PendingValue
{
	int64		key;			/* hash key */
	char	   *profile_type;
	char	   *name;
	char	   *value;
	int			nest_level;
} PendingValue;

typedef struct PendingSeries
{
	int64		id;				/* hash key */
	int			nest_level;
} PendingSeries;

typedef struct Pending
{
	MemoryContext cxt;			/* under TopTransactionContext */
	HTAB	   *pairs;			/* of rows added to parca.samples */
	HTAB	   *values;			/* of series added: values perhaps new */
	HTAB	   *series;			/* added: hours recorded before them (a restore) */
	bool		have_last;		/* the pair of the last row noted */
	HourSeries	last;
} Pending;

/* The index's tables, looked up in this database if not yet. */
extern const IndexTables *series_index_tables(void);

/*
 * Calls fn for each label of labels whose value is not JSON null, with the
 * value as ->> gives it.  A labels value that is not an object (only a
 * direct write of parca.series makes one) has no labels.
 */
typedef void (*LabelFn) (void *arg, const char *name, const char *value);
extern void series_index_labels_each(Jsonb *labels, LabelFn fn, void *arg);

/*
 * The statements, as the tables' owner; a trigger's transition tables
 * (td's, if given) are theirs to read.  With read_sql, which must give one
 * row, that row's columns are each statement's $1, $2...: on Citus a
 * statement that writes a Citus table cannot also read a transition table.
 */
extern void series_index_run_as_owner(const char *const *statements, int n, TriggerData *td,
									  const char *read_sql);

/*
 * The label values, and the marker of the profile type (name NULL), of
 * the (series, hour) pairs in CTE "hours", into parca.label_hours where
 * missing; prefix names the CTEs before it.
 */
extern char *series_index_label_hours_sql(const char *prefix, const char *hours);

/* What p noted, into the tables (before the transaction commits). */
extern void series_index_write_pending(Pending *p);

#endif							/* PARCA_SERIES_INDEX_INTERNAL_H */
