-- The series index (sql/31_series_index.sql, part 61; src/metastore/series_index.c): a GIN
-- index on parca.series by label, the label values of each profile type,
-- and the hours in which each series got sample rows; discovery in C over
-- it (sql/70_query.sql); the metastore's garbage collection forgets the
-- hours of dropped partitions (sql/45_metastore_gc.sql).  The index is
-- built from the rows already stored at the end.

-- Discovery, for Grafana's variable queries.  Without a time range every
-- stored series counts; with one, only series with sample rows in the
-- hours (UTC) it meets.  They read the series index (sql/31_series_index.sql)
-- for callers who may read parca.series (and parca.samples) without
-- row-level security; others get what their own reads find, series with
-- sample rows within the range itself (src/query/discovery.c).  In C,
-- they still run with jit = off (part 57, sql/70_query.sql), but need no
-- search_path: their statements name every object with its schema.
CREATE OR REPLACE FUNCTION parca_profile_types(start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE SET jit = off;
COMMENT ON FUNCTION parca_profile_types(timestamptz, timestamptz) IS
    'the stored profile types (with sample rows in the hours [start, stop] meets, if given)';

CREATE OR REPLACE FUNCTION parca_labels(selector text DEFAULT '{}', start timestamptz DEFAULT NULL,
                             stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE SET jit = off;
COMMENT ON FUNCTION parca_labels(text, timestamptz, timestamptz) IS
    'label names of the series a selector matches';

CREATE OR REPLACE FUNCTION parca_label_values(label text, selector text DEFAULT '{}',
                                   start timestamptz DEFAULT NULL, stop timestamptz DEFAULT NULL)
    RETURNS SETOF text
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE SET jit = off;
COMMENT ON FUNCTION parca_label_values(text, text, timestamptz, timestamptz) IS
    'values of one label among the series a selector matches';

-- (parca_metastore_gc, which forgets the series index's hours too, comes
-- with 52-metastore-gc.sql: a link to its part.)

SELECT parca_series_index_rebuild();
