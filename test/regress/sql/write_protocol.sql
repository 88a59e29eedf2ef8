-- The write protocol (parca_store_*, parca_write_protocol): what a writer
-- that builds its own stacks (parca-agent) calls to store metastore rows.
TRUNCATE parca.samples, parca.series, parca.locations, parca.functions, parca.mappings;
SELECT parca_write_protocol();

-- a location as a value gives the ids the extension computes
SELECT parca_register_location('{"address": "0x1234", "build_id": "b1", "file": "/bin/x",
    "lines": [{"function": "inner", "line": 3}, {"function": "outer", "line": 9}]}') AS loc \gset
SELECT m.id AS mapping, f1.id AS f_inner, f2.id AS f_outer
FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
JOIN parca.functions f1 ON f1.id = l.function_ids[1] JOIN parca.functions f2 ON f2.id = l.function_ids[2] \gset
TRUNCATE parca.locations, parca.functions, parca.mappings;

-- the same rows through the protocol, repeated ids and all, are the same rows
SELECT parca_store_mappings(ARRAY[:mapping, :mapping], '{b1,b1}', '{/bin/x,/bin/x}');
SELECT parca_store_functions(ARRAY[:f_outer, :f_inner], '{outer,inner}', '{"",""}', '{"",""}', '{0,0}');
SELECT parca_store_locations(ARRAY[:loc], ARRAY[:mapping], ARRAY[x'1234'::bigint], '{2}',
                             ARRAY[:f_inner, :f_outer], '{3,9}');
SELECT parca_location(:loc)::text = parca_location(parca_register_location(parca_location(:loc)))::text AS same,
       (SELECT count(*) FROM parca.locations) AS locations,
       (SELECT count(*) FROM parca.functions) AS functions,
       (SELECT count(*) FROM parca.mappings) AS mappings;

-- a location stored without lines gets them later, once; a NULL mapping is none; folded
SELECT parca_store_locations('{10,11}', '{NULL,NULL}', '{16,32}', '{0,0}', '{}', '{}', '{false,true}');
SELECT parca_store_locations('{10}', '{NULL}', '{16}', '{1}', ARRAY[:f_inner], '{5}');
SELECT parca_store_locations('{10}', '{NULL}', '{16}', '{1}', ARRAY[:f_outer], '{6}');
SELECT id, mapping_id, address, function_ids = ARRAY[:f_inner] AS inner_lines, line_numbers, is_folded
FROM parca.locations WHERE id IN (10, 11) ORDER BY id;

-- ids that do not match the content are refused
SELECT parca_store_mappings('{1}', '{b1}', '{/bin/x}');
SELECT parca_store_functions('{1}', '{f}', '{""}', '{""}', '{0}');
-- malformed batches are refused, and store nothing
SELECT parca_store_mappings(ARRAY[:mapping], '{b1,b2}', '{/bin/x}');
SELECT parca_store_mappings(ARRAY[NULL::bigint], '{b1}', '{/bin/x}');
SELECT parca_store_mappings(ARRAY[[1]], '{{b1}}', '{{/bin/x}}');
SELECT parca_store_locations('{20}', '{NULL}', '{16}', '{2}', '{1}', '{1}');
SELECT parca_store_locations('{20}', '{NULL}', '{16}', '{-1}', '{}', '{}');
SELECT parca_store_locations('{20}', '{NULL}', '{16}', '{0}', '{1}', '{1}');
SELECT parca_store_locations('{20}', '{NULL}', '{16}', '{1}', '{1}', '{}');
SELECT parca_store_locations('{20,21}', '{NULL,NULL}', '{16,32}', '{0,0}', '{}', '{}', '{true}');
SELECT parca_store_locations(NULL, '{NULL}', '{16}', '{0}', '{}', '{}');
SELECT count(*) AS nothing_stored FROM parca.locations WHERE id IN (1, 20, 21);
TRUNCATE parca.locations, parca.functions, parca.mappings;
