-- The metastore's garbage collection on Citus (docs/scale-out.md): the
-- references of the raw rows found on the workers' shards by SQL that
-- Citus distributes, and the ids nothing refers to deleted by id (Citus
-- does not join the reference tables with a table of this node).

CREATE OR REPLACE FUNCTION parca_metastore_gc(
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
