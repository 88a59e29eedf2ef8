-- parca_columnar: retention by time partitions whose partitions are
-- columnar; dropping or detaching a partition deletes a time range.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS parca;
RESET client_min_messages;

CREATE TABLE col_part (LIKE parca.samples) PARTITION BY RANGE (time);
CREATE TABLE col_part_d1 PARTITION OF col_part
    FOR VALUES FROM ('2024-01-01 00:00+00') TO ('2024-01-02 00:00+00') USING parca_columnar;
CREATE TABLE col_part_d2 PARTITION OF col_part
    FOR VALUES FROM ('2024-01-02 00:00+00') TO ('2024-01-03 00:00+00') USING parca_columnar;
SET default_table_access_method = parca_columnar;
CREATE TABLE col_part_d3 PARTITION OF col_part
    FOR VALUES FROM ('2024-01-03 00:00+00') TO ('2024-01-04 00:00+00');
RESET default_table_access_method;
SELECT c.relname, a.amname
FROM pg_class c JOIN pg_am a ON a.oid = c.relam
WHERE c.relname LIKE 'col_part_d%' ORDER BY 1;

INSERT INTO col_part
SELECT '2024-01-01 00:00+00'::timestamptz + i * interval '1 minute', i % 3 + 1,
       ('{' || lpad(to_hex(i % 11 + 1), 16, '0') || '}')::stacktrace, 1, 10000000, 0, NULL
FROM generate_series(0, 3 * 1440 - 1) i;
SELECT tableoid::regclass, count(*) FROM col_part GROUP BY 1 ORDER BY 1;

-- partition pruning, then chunk skipping inside the partition
EXPLAIN (COSTS OFF)
SELECT count(*) FROM col_part
WHERE time >= '2024-01-02 06:00+00' AND time < '2024-01-02 07:00+00';
SELECT count(*) FROM col_part
WHERE time >= '2024-01-02 06:00+00' AND time < '2024-01-02 07:00+00';

-- retention: the oldest day goes in one statement
DROP TABLE col_part_d1;
SELECT min(time), count(*) FROM col_part;
-- or detach it first, to archive it
ALTER TABLE col_part DETACH PARTITION col_part_d2;
SELECT count(*) FROM col_part;
SELECT count(*) FROM col_part_d2;
-- row-by-row deletes are refused
DELETE FROM col_part WHERE time < '2024-01-03 12:00+00';
-- emptying a partition keeps it
TRUNCATE col_part_d3;
SELECT count(*) FROM col_part;
