/*
 * samples_table.h
 *		What the extension's C code knows of the samples table: the
 *		columns of parca.samples as sql/40_samples.sql makes it.
 *
 * The attribute numbers below are those of the table the extension
 * creates (and of its rollups, parca.samples_hourly and
 * parca.samples_daily, made LIKE it: sql/46_rollups.sql).  Code that writes rows by attribute number first checks that
 * the table still has exactly these columns (samples_table_has_layout);
 * code that only reads some columns finds them by name and type
 * (samples_table_find_column), so that it keeps working on a table
 * someone has given more columns.  (agent/writer.c, a separate program,
 * names the columns in its COPY statement.)
 */
#ifndef PARCA_SAMPLES_TABLE_H
#define PARCA_SAMPLES_TABLE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/rel.h"

#define SAMPLES_ATT_TIME		1	/* timestamptz: the profile's time */
#define SAMPLES_ATT_SERIES_ID	2	/* bigint: parca.series.id */
#define SAMPLES_ATT_STACK		3	/* stacktrace */
#define SAMPLES_ATT_VALUE		4	/* bigint */
#define SAMPLES_ATT_PERIOD		5	/* bigint: the profile's period */
#define SAMPLES_ATT_DURATION	6	/* bigint: the profile's duration in ns */
#define SAMPLES_ATT_NUM_LABELS	7	/* jsonb: numeric pprof labels, or NULL */
#define SAMPLES_NATTS			7

/* The column names in attribute order, for SQL statements. */
#define SAMPLES_COLUMN_LIST "time, series_id, stack, value, period, duration, num_labels"

/* The OID of table parca.samples; an error if it is missing. */
extern Oid	samples_table_relid(void);

/*
 * Whether rel has exactly the columns above, at their attribute numbers,
 * none generated.  The caller is connected to SPI (the stacktrace type is
 * looked up through it).
 */
extern bool samples_table_has_layout(Relation rel);

/*
 * The attribute number in rel of the column that the table as made has at
 * attno (same name and type), or InvalidAttrNumber.  The caller is
 * connected to SPI.
 */
extern AttrNumber samples_table_find_column(Relation rel, AttrNumber attno);

/*
 * The policy that shows the rows of the rollups to the users whom
 * parca.samples' row-level security does not restrict
 * (sql/47_row_security.sql).
 */
#define SAMPLES_UNRESTRICTED_POLICY "parca_unrestricted_readers"

/*
 * Whether row-level security may hide some rows of rel (parca.samples, a
 * rollup) from the current user: it applies to the user, and the table's
 * policy is not only SAMPLES_UNRESTRICTED_POLICY in a session that
 * parca.samples' row-level security does not restrict (where that policy
 * shows every row).
 */
extern bool samples_table_rls_hides_rows(Relation rel);

/*
 * parca.samples is partitioned by time (sql/40_samples.sql).  Given it
 * opened, the partition that holds time t (the default partition if no
 * other does; InvalidOid if there is none), and the partitions whose time
 * ranges meet [start, stop] (the default partition last).  *routable is
 * false, and nothing is returned, when parent is not range-partitioned on
 * its time column: then only the executor knows where rows go.
 */
extern Oid	samples_table_partition_for(Relation parent, TimestampTz t, bool *routable);
extern List *samples_table_partitions_between(Relation parent, TimestampTz start,
											  TimestampTz stop, bool *routable);

#endif							/* PARCA_SAMPLES_TABLE_H */
