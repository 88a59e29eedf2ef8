-- Reading the metastore: locations as values, stacks as frames.

CREATE FUNCTION parca_register_location(location) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION parca_register_location(location) IS
    'store a location (its address normalized to the file) with its mapping and functions; returns its id';

CREATE FUNCTION parca_location(id bigint) RETURNS location
LANGUAGE sql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_catalog.jsonb_build_object(
        'address', '0x' || pg_catalog.to_hex(l.address),
        'build_id', coalesce(m.build_id, ''),
        'file', coalesce(m.file, ''),
        'folded', l.is_folded,
        'lines', coalesce((
            SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                       'function', f.name, 'system_name', f.system_name,
                       'filename', f.filename, 'line', ln.line,
                       'start_line', f.start_line) ORDER BY ln.pos)
            FROM ROWS FROM (pg_catalog.unnest(l.function_ids), pg_catalog.unnest(l.line_numbers))
                 WITH ORDINALITY AS ln(function_id, line, pos)
            JOIN parca.functions f ON f.id = ln.function_id), '[]'::jsonb)
    )::text::@extschema@.location
    FROM parca.locations l LEFT JOIN parca.mappings m ON m.id = l.mapping_id
    WHERE l.id = $1
$$;
COMMENT ON FUNCTION parca_location(bigint) IS 'the stored location with this id, as a value';

-- One row per frame, leaf first; a location with inlined lines gives one
-- row per line, innermost first, all but its last marked inlined.
CREATE FUNCTION parca_frames(stack stacktrace)
RETURNS TABLE (depth integer, location_id bigint, function text, system_name text,
               file text, line bigint, address bigint, mapping text, build_id text,
               inlined boolean)
LANGUAGE sql STABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT fr.depth::integer, fr.id, f.name, f.system_name, f.filename, ln.line,
           l.address, m.file, m.build_id,
           coalesce(ln.pos < pg_catalog.cardinality(l.function_ids), false)
    FROM pg_catalog.unnest(@extschema@.parca_stack_location_ids($1)) WITH ORDINALITY AS fr(id, depth)
    LEFT JOIN parca.locations l ON l.id = fr.id
    LEFT JOIN parca.mappings m ON m.id = l.mapping_id
    LEFT JOIN LATERAL ROWS FROM (pg_catalog.unnest(l.function_ids), pg_catalog.unnest(l.line_numbers))
         WITH ORDINALITY AS ln(function_id, line, pos) ON true
    LEFT JOIN parca.functions f ON f.id = ln.function_id
    ORDER BY fr.depth, ln.pos
$$;
COMMENT ON FUNCTION parca_frames(stacktrace) IS 'the frames of a stack, leaf first, with function, file, line, address and mapping';
