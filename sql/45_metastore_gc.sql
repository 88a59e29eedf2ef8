-- Garbage collection of the metastore (src/metastore/metastore_gc.c): series that
-- no sample row refers to any more, locations that no stack refers to,
-- and the functions and mappings that no remaining location refers to.
--
-- Against concurrent writers: every writer of parca.samples registers or
-- looks up its ids (metastore.c) holding parca.samples in ROW EXCLUSIVE
-- mode until it commits; the collection takes it in SHARE mode, so it
-- waits for writers in flight (their rows are then seen) and writers
-- wait for it.  At its commit every backend's metastore cache is
-- emptied, so an id it removed is registered again, ON CONFLICT DO
-- NOTHING finding nothing, before a stack refers to it.  A writer with a
-- cache of its own (parca-agent) must do the same: begin its transaction
-- with LOCK TABLE parca.samples IN ROW EXCLUSIVE MODE, then compare
-- parca_metastore_generation() with the one its cache was filled under
-- (docs/ingestion.md).
CREATE SEQUENCE parca.metastore_generation;

CREATE FUNCTION parca.partition_references(partitions regclass[], OUT kind "char", OUT id bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'parca_partition_references' LANGUAGE C STRICT;
CREATE FUNCTION parca.partition_content_version(partition regclass) RETURNS text
    AS 'MODULE_PATHNAME', 'parca_partition_content_version' LANGUAGE C STRICT;
CREATE FUNCTION parca.metastore_invalidate() RETURNS void
    AS 'MODULE_PATHNAME', 'parca_metastore_invalidate' LANGUAGE C;
REVOKE ALL ON FUNCTION parca.partition_references(regclass[]), parca.partition_content_version(regclass),
    parca.metastore_invalidate() FROM PUBLIC;

-- The references of each parca_columnar partition as the last collection
-- read them, with the partition's content version then: a partition is
-- read again only when rows came to it (or it was truncated), so the
-- collection's cost follows the rows that arrived since, not all the
-- rows kept.  Not dumped: a restored database reads its partitions once.
CREATE TABLE parca.partition_references_cache (
    partition   oid PRIMARY KEY,
    version     text NOT NULL,
    series      bigint[] NOT NULL,
    locations   bigint[] NOT NULL
);
REVOKE ALL ON parca.partition_references_cache FROM PUBLIC;

-- Which collection the metastore is at (0 before the first): a writer that
-- caches ids empties its cache when this changes.  Read after taking
-- parca.samples.  (A sequence's last_value is 1 both before and after its
-- first nextval: is_called tells them apart.)
CREATE FUNCTION parca_metastore_generation() RETURNS bigint
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM parca.metastore_generation $$;
GRANT SELECT ON parca.metastore_generation TO PUBLIC;

CREATE FUNCTION parca_metastore_gc(
    OUT series bigint, OUT locations bigint, OUT functions bigint, OUT mappings bigint)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    -- writers wait while it holds parca.samples: it does not wait long for it
    SET lock_timeout = '10s'
AS $$
DECLARE
    p record;
    kept_from timestamptz;
    hours bigint;
    ids bigint[];
    -- on Citus the raw rows are in shards on the workers: their references
    -- are found there, by SQL that Citus distributes (docs/scale-out.md)
    on_citus boolean := parca.is_citus_table('parca.samples');
BEGIN
    -- no writer in flight from here on: a content version read now
    -- stays true until this transaction ends (Citus takes the lock on
    -- every node with its metadata too)
    LOCK TABLE parca.samples IN SHARE MODE;
    -- the rollups' stacks and series too (sql/46_rollups.sql): they
    -- outlive the raw rows
    CREATE TEMP TABLE parca_gc_parts ON COMMIT DROP AS
        SELECT r.partition, r.raw, a.amname FROM (
            SELECT partition, true AS raw FROM parca.partition_ranges()
            UNION ALL
            SELECT partition, false FROM parca.partition_ranges('parca.samples_hourly')
            UNION ALL
            SELECT partition, false FROM parca.partition_ranges('parca.samples_daily')
            UNION ALL
            SELECT partition, false FROM parca.partition_ranges('parca.samples_weekly')) r
        JOIN pg_class c ON c.oid = r.partition JOIN pg_am a ON a.oid = c.relam
        WHERE NOT (r.raw AND on_citus);
    DELETE FROM parca.partition_references_cache c
    WHERE NOT EXISTS (SELECT FROM parca_gc_parts g WHERE g.raw AND g.partition = c.partition);
    FOR p IN SELECT g.partition, parca.partition_content_version(g.partition) AS version
             FROM parca_gc_parts g WHERE g.raw AND g.amname = 'parca_columnar'
    LOOP
        IF NOT EXISTS (SELECT FROM parca.partition_references_cache c
                       WHERE c.partition = p.partition AND c.version = p.version) THEN
            DELETE FROM parca.partition_references_cache c WHERE c.partition = p.partition;
            INSERT INTO parca.partition_references_cache
            SELECT p.partition, p.version,
                   coalesce(array_agg(r.id) FILTER (WHERE r.kind = 's'), '{}'),
                   coalesce(array_agg(r.id) FILTER (WHERE r.kind = 'l'), '{}')
            FROM parca.partition_references(ARRAY[p.partition]) r;
        END IF;
    END LOOP;
    CREATE TEMP TABLE parca_gc_refs (kind "char", id bigint) ON COMMIT DROP;
    INSERT INTO parca_gc_refs
    SELECT DISTINCT 's'::"char", unnest(c.series) FROM parca.partition_references_cache c
    UNION ALL
    SELECT DISTINCT 'l'::"char", unnest(c.locations) FROM parca.partition_references_cache c;
    IF on_citus THEN
        -- each shard's series, and the locations of its distinct stacks
        -- (a group that holds series_id: each shard makes its own)
        INSERT INTO parca_gc_refs SELECT 's', x.series_id FROM parca.samples x GROUP BY x.series_id;
        INSERT INTO parca_gc_refs
        SELECT DISTINCT 'l'::"char", l
        FROM (SELECT x.stack FROM parca.samples x GROUP BY x.series_id, x.stack) x,
             unnest(@extschema@.parca_stack_location_ids(x.stack)) l;
    END IF;
    -- the rollups are read whole, not through the cache: their writer (the
    -- maintenance worker, parca_rollup_hours) is not held off by the lock
    -- above, so a content version read here could count rows this
    -- snapshot does not see (their stacks are those of raw rows that
    -- this snapshot sees: the writer holds the raw partitions it reads
    -- until it commits)
    INSERT INTO parca_gc_refs
    SELECT * FROM parca.partition_references(ARRAY(
        SELECT g.partition FROM parca_gc_parts g WHERE NOT g.raw AND g.amname = 'parca_columnar'));
    FOR p IN SELECT g.partition FROM parca_gc_parts g WHERE g.amname <> 'parca_columnar'
    LOOP
        -- a partition someone rewrote as heap: read its rows
        EXECUTE format('INSERT INTO parca_gc_refs SELECT DISTINCT ''s'', series_id FROM %s', p.partition);
        EXECUTE format('INSERT INTO parca_gc_refs SELECT DISTINCT ''l'', l
                        FROM %s, unnest(@extschema@.parca_stack_location_ids(stack)) l', p.partition);
    END LOOP;
    CREATE INDEX ON parca_gc_refs (kind, id);
    ANALYZE parca_gc_refs;

    -- The ids nothing refers to are found in statements of their own, and
    -- then deleted by id: on Citus the metastore's tables are reference
    -- tables, and Citus does not join them with parca_gc_refs, a table of
    -- this node.  (A writer that could name a new id waits for the lock.)
    -- (the series index's trigger drops their label values and hours)
    ids := ARRAY(SELECT s.id FROM parca.series s);
    ids := ARRAY(SELECT u.id FROM unnest(ids) u(id)
                 WHERE NOT EXISTS (SELECT FROM parca_gc_refs r WHERE r.kind = 's' AND r.id = u.id));
    DELETE FROM parca.series s USING unnest(ids) u(id) WHERE s.id = u.id;
    GET DIAGNOSTICS series = ROW_COUNT;
    -- the series index's hours before the oldest raw row kept: the
    -- partitions of their rows were dropped (sql/30_metastore.sql)
    kept_from := least((SELECT min(r.range_start) FROM parca.partition_ranges() r WHERE NOT r.is_default),
                       (SELECT parca.series_hour(min(x.time)) FROM parca.samples_default x));
    DELETE FROM parca.series_hours WHERE hour < kept_from;
    GET DIAGNOSTICS hours = ROW_COUNT;
    DELETE FROM parca.label_hours WHERE hour < kept_from;
    ids := ARRAY(SELECT l.id FROM parca.locations l);
    ids := ARRAY(SELECT u.id FROM unnest(ids) u(id)
                 WHERE NOT EXISTS (SELECT FROM parca_gc_refs r WHERE r.kind = 'l' AND r.id = u.id));
    DELETE FROM parca.locations l USING unnest(ids) u(id) WHERE l.id = u.id;
    GET DIAGNOSTICS locations = ROW_COUNT;
    DELETE FROM parca.functions f
    WHERE NOT EXISTS (SELECT FROM parca.locations l, unnest(l.function_ids) u(fid) WHERE u.fid = f.id);
    GET DIAGNOSTICS functions = ROW_COUNT;
    DELETE FROM parca.mappings m
    WHERE NOT EXISTS (SELECT FROM parca.locations l WHERE l.mapping_id = m.id);
    GET DIAGNOSTICS mappings = ROW_COUNT;

    -- (the caches of the series index's hours too)
    IF series + locations + functions + mappings + hours > 0 THEN
        PERFORM parca.metastore_invalidate();
    END IF;
    IF series + locations + functions + mappings > 0 THEN
        PERFORM nextval('parca.metastore_generation');
        RAISE LOG 'parca: metastore garbage collection removed % series, % locations, % functions, % mappings',
            series, locations, functions, mappings;
    END IF;
    DROP TABLE parca_gc_refs, parca_gc_parts;
END
$$;
REVOKE ALL ON FUNCTION parca_metastore_gc() FROM PUBLIC;
