#!/usr/bin/env bash
# End-to-end tests of the parca_columnar access method that need more than
# one session or a crash: kill -9 during COPY, kill -9 after commit (WAL
# replay), concurrent writers, pg_dump/pg_restore round trip, physical
# replication to a streaming standby, a table of a newer storage format.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

PORT=${PARCA_COLUMNAR_TEST_PORT:-54413}
start_cluster "$PORT" "wal_level = replica" "max_wal_senders = 4" "shared_buffers = 256MB"
STANDBY_PORT=$((PGPORT + 1))

# the benchmark's generator makes realistic samples as binary COPY data
gen=$(mktemp /tmp/parca-gen.XXXXXX)
cc -O2 -o "$gen" "$REPO_ROOT/bench/gen_samples.c" -lm
chmod 755 "$gen"
data=$PGDATA_DIR/samples.bin
"$gen" 200000 20 > "$data" 2>/dev/null
chown postgres: "$data"

q "CREATE TABLE s (LIKE parca.samples) USING parca_columnar"
q "SELECT parca_columnar_set_options('s', stripe_rows => 50000)"
q "COPY s FROM '$data' WITH (format binary)"
committed=$(q "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM s")
check_eq "COPY loads every row" "200000" "$(q "SELECT count(*) FROM s")"

# 1. kill -9 of the postmaster in the middle of a large COPY
blocks_before=$(q "SELECT pg_relation_size('s') / 8192")
"$gen" 1500000 50 > "$PGDATA_DIR/big.bin" 2>/dev/null
chown postgres: "$PGDATA_DIR/big.bin"
# (its stripes on data pages: with their stacks in the table's dictionary
# they are small enough to be kept inline)
PGOPTIONS="-c parca.columnar_inline_stripe_bytes=0" \
	psql -X -qAt -c "COPY s FROM '$PGDATA_DIR/big.bin' WITH (format binary)" >/dev/null 2>&1 &
copy_pid=$!
# wait until the COPY is well under way and has written stripes of its own
progress=0
for _ in $(seq 1 600); do
	progress=$(q "SELECT coalesce(max(tuples_processed), 0) FROM pg_stat_progress_copy")
	[ "$progress" -gt 400000 ] && break
	sleep 0.05
done
check "the COPY was killed half way ($progress rows in)" \
	test "$progress" -gt 400000 -a "$progress" -lt 1500000
kill_cluster
wait "$copy_pid" 2>/dev/null || true
restart_cluster
check_eq "after kill -9 during COPY: committed rows all there, no others" \
	"$committed" "$(q "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM s")"
check "after kill -9 during COPY: integrity check passes" \
	test "$(q "SELECT rows FROM parca_columnar_check('s')")" = 200000
check "the killed COPY had written data pages" \
	test "$(q "SELECT pg_relation_size('s') / 8192")" -gt "$blocks_before"

# 2. kill -9 right after a commit: the stripes come back from the WAL
q "COPY s FROM '$data' WITH (format binary)"
q "INSERT INTO s SELECT * FROM s LIMIT 10"
after=$(q "SELECT count(*) || '/' || sum(value) FROM s")
kill_cluster
restart_cluster
check_eq "after kill -9 after commit: every committed row replayed" \
	"$after" "$(q "SELECT count(*) || '/' || sum(value) FROM s")"
check "after kill -9 after commit: integrity check passes" \
	test "$(q "SELECT rows FROM parca_columnar_check('s')")" = 400010
# writing goes on after recovery
q "INSERT INTO s SELECT * FROM s LIMIT 5"
check_eq "writes after recovery" "400015" "$(q "SELECT count(*) FROM s")"

# 3. concurrent writers: four COPYs at once, then small transactions
q "CREATE TABLE c (LIKE parca.samples) USING parca_columnar"
q "CREATE INDEX ON c (series_id, time)"
pids=()
for _ in 1 2 3 4; do
	psql -X -qAt -c "COPY c FROM '$data' WITH (format binary)" >/dev/null &
	pids+=($!)
done
for _ in 1 2; do
	psql -X -qAt -c "DO \$\$ BEGIN FOR i IN 1..30 LOOP
		INSERT INTO c SELECT * FROM s LIMIT 50; COMMIT; END LOOP; END \$\$" >/dev/null &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
check_eq "concurrent writers: every row" "$((4 * 200000 + 2 * 30 * 50))" "$(q "SELECT count(*) FROM c")"
check "concurrent writers: integrity check passes" \
	test "$(q "SELECT rows FROM parca_columnar_check('c')")" = $((4 * 200000 + 2 * 30 * 50))
check_eq "concurrent writers: index agrees with the table" \
	"$(q "SET enable_seqscan = off; SET parca.columnar_enable_custom_scan = off; SELECT count(*) FROM c WHERE series_id = 3 AND time > '2000-01-01'" | tail -1)" \
	"$(q "SET enable_indexscan = off; SET enable_bitmapscan = off; SELECT count(*) FROM c WHERE series_id = 3 AND time > '2000-01-01'" | tail -1)"

# 4. pg_dump / pg_restore round trip
q "CREATE TABLE d (LIKE parca.samples) USING parca_columnar"
q "INSERT INTO d SELECT * FROM s LIMIT 50000"
q "CREATE INDEX d_time ON d (time)"
q "CREATE DATABASE restored"
psql -X -qAt -d restored -c "CREATE EXTENSION parca" >/dev/null
dump=$PGDATA_DIR/d.dump
"$PG_BIN/pg_dump" -Fc -t d -f "$dump" postgres
"$PG_BIN/pg_restore" -d restored "$dump"
check_eq "pg_dump/pg_restore: same rows" \
	"$(q "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM d")" \
	"$(psql -X -qAt -d restored -c "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM d")"
check_eq "pg_dump/pg_restore: still parca_columnar" "parca_columnar" \
	"$(psql -X -qAt -d restored -c "SELECT amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE relname = 'd'")"
check_eq "pg_dump/pg_restore: integrity check" "50000" \
	"$(psql -X -qAt -d restored -c "SELECT rows FROM parca_columnar_check('d')")"

# ... and of a whole database, with parca.samples in time partitions: the
# partitions the maintenance made are dumped with their rows, the default
# partition (a member of the extension) with its rows only
q "INSERT INTO parca.samples SELECT * FROM s LIMIT 30000"
q "INSERT INTO parca.samples SELECT time - interval '3 days', series_id, stack, value, period, duration, num_labels
	FROM s LIMIT 20000"
q "SELECT * FROM parca_maintain_partitions()" >/dev/null
q "INSERT INTO parca.samples SELECT 'infinity', series_id, stack, value, period, duration, num_labels FROM s LIMIT 3"
partitions_of() { psql -X -qAt -d "$1" -c "SELECT string_agg(partition || ' ' || coalesce(range_start::text, 'default'), ',' ORDER BY partition::text) FROM parca.partitions"; }
rows_of() { psql -X -qAt -d "$1" -c "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) || '/' || count(DISTINCT tableoid) FROM parca.samples"; }
check "pg_dump of the database: the rows are in several partitions" \
	test "$(q "SELECT count(DISTINCT tableoid) FROM parca.samples")" -ge 3
# restored with its workers off (docs/workers.md): its maintenance worker
# would make the day's partitions that the dump makes too
q "CREATE DATABASE restored_all"
q "ALTER DATABASE restored_all SET parca.workers = off"
dump_all=$PGDATA_DIR/all.dump
"$PG_BIN/pg_dump" -Fc -f "$dump_all" postgres
"$PG_BIN/pg_restore" --exit-on-error -d restored_all "$dump_all"
check_eq "pg_dump/pg_restore of the database: the same partitions" "$(partitions_of postgres)" "$(partitions_of restored_all)"
check_eq "pg_dump/pg_restore of the database: the same rows in them" "$(rows_of postgres)" "$(rows_of restored_all)"
check_eq "pg_dump/pg_restore of the database: partitions are parca_columnar" "parca_columnar" \
	"$(psql -X -qAt -d restored_all -c "SELECT string_agg(DISTINCT amname, ',') FROM parca.partitions p
		JOIN pg_class c ON c.oid = p.partition JOIN pg_am a ON a.oid = c.relam")"

# ... and by a pg_dump whose snapshot was taken before a maintenance round
# moved rows out of the default partition and committed (pg_dump takes its
# snapshot before its locks; --snapshot makes the order certain): the move
# deletes them there as MVCC deletes, so the dump holds each row once, in
# the default partition, as its snapshot saw them.  A session holds the
# maintenance's advisory lock until the snapshot is taken, so that the
# worker's round cannot move the rows before it.
coproc snap_session { psql -X -qAtn 2>&1; }
cat >&"${snap_session[1]}" <<SQL
SELECT pg_advisory_lock(hashtext('parca.samples partitions'));
INSERT INTO parca.samples SELECT time - interval '40 years', series_id, stack, value, period, duration, num_labels
	FROM s LIMIT 5000;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT pg_export_snapshot();
SELECT pg_advisory_unlock(hashtext('parca.samples partitions'));
SQL
read -r _ <&"${snap_session[0]}"
read -r snapshot <&"${snap_session[0]}"
read -r _ <&"${snap_session[0]}"
before_move=$(q "SELECT count(*) || '/' || sum(value) FROM parca.samples")
# (the snapshot's own session reads nothing: its locks would hold the move)
q "SELECT * FROM parca_maintain_partitions()" >/dev/null
check_eq "pg_dump under a move: the round committed, the default partition holds no finite time" 0 \
	"$(q "SELECT count(*) FROM parca.samples_default WHERE isfinite(time)")"
as_of_snapshot() {
	psql -X -qAt -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SET TRANSACTION SNAPSHOT '$snapshot'" \
		-c "$1" -c "COMMIT"
}
check_eq "pg_dump under a move: the snapshot from before it still sees the rows in the default partition" \
	5000 "$(as_of_snapshot "SELECT count(*) FROM parca.samples_default WHERE isfinite(time)")"
check_eq "pg_dump under a move: and all rows once" "$before_move" \
	"$(as_of_snapshot "SELECT count(*) || '/' || sum(value) FROM parca.samples")"
"$PG_BIN/pg_dump" -Fc --snapshot="$snapshot" -f "$PGDATA_DIR/moved.dump" postgres
echo 'COMMIT;' >&"${snap_session[1]}"
echo '\q' >&"${snap_session[1]}"
wait "$snap_session_PID" 2>/dev/null || true
q "CREATE DATABASE restored_moved"
q "ALTER DATABASE restored_moved SET parca.workers = off"
"$PG_BIN/pg_restore" --exit-on-error -d restored_moved "$PGDATA_DIR/moved.dump"
check_eq "pg_dump under a move: the dump holds every row once" "$before_move" \
	"$(psql -X -qAt -d restored_moved -c "SELECT count(*) || '/' || sum(value) FROM parca.samples")"
check_eq "pg_dump under a move: the database after the move holds them too" "$before_move" \
	"$(q "SELECT count(*) || '/' || sum(value) FROM parca.samples")"

# 6. a table whose metapage says it was written in a newer storage format
#    (as after going back to an older build) is refused, not misread; it
#    can still be dropped or truncated.  The version is the metapage's
#    second uint32, after the 24-byte page header (columnar_internal.h).
q "CREATE TABLE newer (LIKE parca.samples) USING parca_columnar"
q "INSERT INTO newer SELECT * FROM s LIMIT 1000"
q "CREATE TABLE newer_dropped (LIKE parca.samples) USING parca_columnar"
q "INSERT INTO newer_dropped SELECT * FROM s LIMIT 1000"
dropped_storage=$(q "SELECT max(storage_id) FROM parca.columnar_stripes")
newer_files=("$PGDATA_DIR/data/$(q "SELECT pg_relation_filepath('newer')")"
	"$PGDATA_DIR/data/$(q "SELECT pg_relation_filepath('newer_dropped')")")
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
for f in "${newer_files[@]}"; do
	printf '\x05\x00\x00\x00' | dd of="$f" bs=1 seek=28 conv=notrunc status=none
done
restart_cluster
refused() { ! out=$(psql -X -qAt -c "$1" 2>&1) &&
	grep -q 'has storage format version 5, newer than this build of parca reads (4)' <<<"$out"; }
check "newer format: SELECT is refused" refused "SELECT count(*) FROM newer"
check "newer format: INSERT is refused" refused "INSERT INTO newer SELECT * FROM s LIMIT 1"
check "newer format: the integrity check is refused" \
	refused "SELECT * FROM parca_columnar_check('newer')"
q "DROP TABLE newer_dropped"
check_eq "newer format: DROP TABLE works and forgets its stripes" "0" \
	"$(q "SELECT count(*) FROM parca.columnar_stripes WHERE storage_id = $dropped_storage")"
q "TRUNCATE newer"
q "INSERT INTO newer SELECT * FROM s LIMIT 10"
check_eq "newer format: TRUNCATE gives the table storage of this version" "10" \
	"$(q "SELECT count(*) FROM newer")"

# 7. a table of format version 1, as older builds made it (a new table is
#    of this build's version: the metapage is set back to 1 by hand, over
#    stripes of version 1, without word dictionaries), stays at 1 while
#    what is written into it is of version 1 (text, stacks all NULL), and
#    is raised to 3 before its first stripe with a word dictionary (and its
#    ids), written as a database not yet updated to 0.2 does (without
#    parca.columnar_dictionary, renamed away for it); then to 4 before its
#    first segment of a stack dictionary.  Its stripes of every version
#    still read, and compaction merges them all.
#    (What it reads then must not be a table with such segments: s_rows
#    holds rows of s in a heap table.)
without_dictionary() {
	q "ALTER TABLE parca.columnar_dictionary RENAME TO columnar_dictionary_away"
	q "$1"
	q "ALTER TABLE parca.columnar_dictionary_away RENAME TO columnar_dictionary"
}
q "CREATE TABLE s_rows AS SELECT * FROM s LIMIT 40000"
meta_version() {
	q "CHECKPOINT"
	od -An -tu4 -j28 -N4 "$PGDATA_DIR/data/$(q "SELECT pg_relation_filepath('$1')")" | tr -d ' '
}
q "CREATE TABLE older (t text, st stacktrace) USING parca_columnar"
q "INSERT INTO older SELECT 'row ' || (i % 100), NULL FROM generate_series(1, 3000) i"
check_eq "a new table is of this build's version" "4" "$(meta_version older)"
older_file=$PGDATA_DIR/data/$(q "SELECT pg_relation_filepath('older')")
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
printf '\x01\x00\x00\x00' | dd of="$older_file" bs=1 seek=28 conv=notrunc status=none
restart_cluster
check_eq "version 1: set by hand" "1" "$(meta_version older)"
q "INSERT INTO older SELECT 'more ' || (i % 100), NULL FROM generate_series(1, 3000) i"
check_eq "version 1: stripes without word dictionaries keep it" "1" "$(meta_version older)"
without_dictionary "INSERT INTO older SELECT 'stack', stack FROM s_rows LIMIT 20000"
check_eq "version 1: the stacks were written as a word dictionary" "dictionary(words)" \
	"$(q "SELECT string_agg(DISTINCT encoding, ',') FROM parca_columnar_chunks('older') WHERE attname = 'st' AND chunk_group = -1")"
check_eq "version 1: raised to 3 by the first word dictionary" "3" "$(meta_version older)"
q "INSERT INTO older SELECT 'stack', stack FROM s_rows OFFSET 20000 LIMIT 20000"
check_eq "version 3: the stacks then go to the table's stack dictionary" \
	"dictionary(entries delta_rle),dictionary(words)/1" \
	"$(q "SELECT string_agg(DISTINCT encoding, ',' ORDER BY encoding) FROM parca_columnar_chunks('older') WHERE attname = 'st' AND chunk_group = -1")/$(q "SELECT count(*) FROM parca_columnar_chunks('older') WHERE stripe IS NULL AND chunk_group = -1")"
check_eq "version 3: raised to 4 by the first segment" "4" "$(meta_version older)"
older_rows="SELECT count(*) || '/' || count(st) || '/' || count(DISTINCT st) FROM older"
check_eq "version 1: every row reads" "46000/40000/$(q "SELECT count(DISTINCT stack) FROM s_rows")" \
	"$(q "$older_rows")"
older_before=$(q "$older_rows")
q "SELECT parca_columnar_compact('older')" >/dev/null
check_eq "version 1: after compaction, every row reads" "$older_before" "$(q "$older_rows")"
check_eq "version 1: integrity check" "46000" "$(q "SELECT rows FROM parca_columnar_check('older')")"

# 8. a table of format version 2, as the build before made it: word
#    dictionaries without ids.  A stripe's ids are taken out of its
#    directory by hand (the flag COLUMNAR_STRIPE_DICT_IDS, byte 20 of the
#    directory, cleared, and the ColumnarChunk of 48 bytes per column that
#    ends it cut off; the ids' bytes stay in the data, unreferenced) and
#    the metapage is set back to 2.  It reads as before, the integrity
#    check passes, the first stripe written with ids raises it to 3, and
#    compaction writes its stripes anew, with ids.
q "CREATE FUNCTION le32(d bytea, o int) RETURNS bigint LANGUAGE sql IMMUTABLE AS
	'SELECT get_byte(d, o) + get_byte(d, o + 1) * 256 + get_byte(d, o + 2) * 65536 + get_byte(d, o + 3)::bigint * 16777216'"
q "CREATE FUNCTION set_le32(d bytea, o int, v bigint) RETURNS bytea LANGUAGE sql IMMUTABLE AS
	'SELECT set_byte(set_byte(set_byte(set_byte(d, o, (v % 256)::int), o + 1, (v / 256 % 256)::int), o + 2, (v / 65536 % 256)::int), o + 3, (v / 16777216 % 256)::int)'"
# a directory without its ids (a stripe of version 2)
q "CREATE FUNCTION strip_ids(d bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS
	'SELECT substr(set_byte(d, 20, get_byte(d, 20) - (get_byte(d, 20) & 2)), 1, length(d) - le32(d, 4)::int * 48)'"
# the offset in directory d of the ids' ColumnarChunk of column a (from 0):
# after the header (32 bytes), the row ranges (16), columns (56), chunks (48)
q "CREATE FUNCTION ids_chunk(d bytea, a int) RETURNS int LANGUAGE sql IMMUTABLE AS
	'SELECT 32 + le32(d, 16)::int * 16 + le32(d, 4)::int * 56 + (le32(d, 4) * le32(d, 8))::int * 48 + a * 48'"
has_ids="(get_byte(directory, 20) & 2) = 2"
q "CREATE TABLE v2 (LIKE parca.samples) USING parca_columnar"
without_dictionary "INSERT INTO v2 SELECT * FROM s_rows LIMIT 20000"
v2_storage=$(q "SELECT max(storage_id) FROM parca.columnar_stripes")
v2_rows="SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM v2"
v2_before=$(q "$v2_rows")
check_eq "version 3: a stripe of stacks has their ids" "1" \
	"$(q "SELECT count(*) FROM parca.columnar_stripes WHERE storage_id = $v2_storage AND $has_ids")"
q "UPDATE parca.columnar_stripes SET directory = strip_ids(directory) WHERE storage_id = $v2_storage"
v2_file=$PGDATA_DIR/data/$(q "SELECT pg_relation_filepath('v2')")
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m fast -w stop >/dev/null
printf '\x02\x00\x00\x00' | dd of="$v2_file" bs=1 seek=28 conv=notrunc status=none
restart_cluster
check_eq "version 2: set by hand, its stripe without ids" "2/0" \
	"$(meta_version v2)/$(q "SELECT count(*) FROM parca.columnar_stripes WHERE storage_id = $v2_storage AND $has_ids")"
check_eq "version 2: every row reads" "$v2_before" "$(q "$v2_rows")"
check_eq "version 2: integrity check" "20000" "$(q "SELECT rows FROM parca_columnar_check('v2')")"
q "INSERT INTO v2 SELECT * FROM s OFFSET 20000 LIMIT 20000"
check_eq "version 2: raised to 4 by the first stripe of the table's dictionary" "4" "$(meta_version v2)"
q "SELECT parca_columnar_compact('v2')" >/dev/null
check_eq "version 2: compaction writes every stripe anew, its stacks in the table's dictionary" "0" \
	"$(q "SELECT count(*) FROM parca_columnar_chunks('v2') WHERE attname = 'stack' AND chunk_group = -1 AND encoding NOT LIKE 'dictionary(entries %'")"
check_eq "version 2: after compaction, every row reads" "40000" "$(q "SELECT count(*) FROM v2")"
check_eq "version 2: after compaction, integrity check" "40000" \
	"$(q "SELECT rows FROM parca_columnar_check('v2')")"

# 5. physical replication: a streaming standby reads the same rows
standby=$PGDATA_DIR/standby
runuser -u postgres -- "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PGPORT" -U postgres \
	-D "$standby" -R -X stream -c fast >/dev/null
# the standby listens on its Unix socket only: no TCP port to collide
{
	echo "port = $STANDBY_PORT"
	echo "listen_addresses = ''"
	echo "unix_socket_directories = '$standby'"
	echo "hot_standby = on"
} >> "$standby/postgresql.conf"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$standby" -l "$PGDATA_DIR/standby.log" -w start >/dev/null
stop_standby() {
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$standby" -m immediate stop >/dev/null 2>&1 || true
	stop_cluster
}
trap stop_standby EXIT
q "CREATE TABLE rep (LIKE parca.samples) USING parca_columnar"
# a stored profile, for parca_query on the standby (a read-only session)
# (a copy the server may read: the clone may live where postgres cannot)
cp "$SHARED_TESTDATA/pprof/parca/alloc_objects.pb.gz" "$PGDATA_DIR/rep.pb.gz"
chown postgres: "$PGDATA_DIR/rep.pb.gz"
q "SELECT parca_ingest_pprof(pg_read_binary_file('$PGDATA_DIR/rep.pb.gz'), 'rep')" >/dev/null
q "COPY rep FROM '$data' WITH (format binary)"
q "INSERT INTO rep SELECT * FROM rep LIMIT 7"
lsn=$(q "SELECT pg_current_wal_lsn()")
for _ in $(seq 1 100); do
	done_=$(psql -X -qAt -h "$standby" -p "$STANDBY_PORT" -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")
	[ "$done_" = t ] && break
	sleep 0.1
done
check_eq "standby: same rows as the primary" \
	"$(q "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM rep")" \
	"$(psql -X -qAt -h "$standby" -p "$STANDBY_PORT" -c "SELECT count(*) || '/' || sum(value) || '/' || count(DISTINCT stack) FROM rep")"
check_eq "standby: integrity check" "200007" \
	"$(psql -X -qAt -h "$standby" -p "$STANDBY_PORT" -c "SELECT rows FROM parca_columnar_check('rep')")"
check_eq "standby: the same partitions of parca.samples" "$(partitions_of postgres)" \
	"$(PGHOST=$standby PGPORT=$STANDBY_PORT partitions_of postgres)"
check_eq "standby: the same rows in them" "$(rows_of postgres)" "$(PGHOST=$standby PGPORT=$STANDBY_PORT rows_of postgres)"
rep_query="SELECT parca_profile_total(parca_query('rep:alloc_space:bytes:space:bytes', '-infinity', 'infinity'))"
check_eq "standby: parca_query answers as on the primary" "$(q "$rep_query")" \
	"$(psql -X -qAt -h "$standby" -p "$STANDBY_PORT" -c "$rep_query" 2>&1)"
explain=$(psql -X -qAt -h "$standby" -p "$STANDBY_PORT" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM rep WHERE time < '2026-01-01 00:00:30+00'")
check "standby: chunk skipping works there too" grep -q 'Chunk Groups Skipped: [1-9]' <<<"$explain"

# 9. parca_query reads a stack by its id: from the table's stack
#    dictionary (version 4), from a stripe's ids (version 3), or by its
#    frames where a stripe has none (version 2): the same answer every way.
#    A segment whose ids do not match its entries (its ids' chunk 8 bytes
#    short) is an error that names the damage, for parca_query and for the
#    integrity check, and the server goes on.  The same profile is stored
#    under two names: "rep" as this build writes it, "rep_old" as a
#    database not yet updated to 0.2 does (stripe dictionaries with ids,
#    which are then stripped to make them version 2's).
q "SELECT parca_ingest_pprof(pg_read_binary_file('$PGDATA_DIR/rep.pb.gz'), 'rep', jsonb_build_object('copy', i::text))
	FROM generate_series(1, 3) i" >/dev/null
# (four copies: "rep" has one more, from the replication test above)
without_dictionary "SELECT parca_ingest_pprof(pg_read_binary_file('$PGDATA_DIR/rep.pb.gz'), 'rep_old', jsonb_build_object('copy', i::text))
	FROM generate_series(0, 3) i" >/dev/null
# (its total and stacks: the profile names the query it answers; over the
# profile's day, which the generated rows put into parca.samples above,
# whose series ids are any, do not reach)
rep_md5() {
	q "SELECT parca_profile_total(p) || '/' ||
		(SELECT md5(string_agg(s::text, ';' ORDER BY s::text)) FROM parca_profile_stacks(p) s)
		FROM parca_query('$1:alloc_space:bytes:space:bytes', '2020-12-17', '2020-12-18') p"
}
with_dictionary=$(rep_md5 rep)
check_eq "stripes with ids (version 3): parca_query answers as from the table's dictionary" \
	"$with_dictionary" "$(rep_md5 rep_old)"
# the segments of parca.samples' partitions: their ids' chunk (the one
# ColumnarChunk after the header, range and column) 8 bytes short
q "CREATE FUNCTION damage_ids(d bytea) RETURNS bytea LANGUAGE sql IMMUTABLE AS
	'SELECT set_le32(d, ids_chunk(d, 0) + 8, le32(d, ids_chunk(d, 0) + 8) - 8)'"
q "CREATE TABLE saved_segments AS SELECT storage_id, first_entry, directory FROM parca.columnar_dictionary"
check "parca.samples: its stacks are in segments" test "$(q "SELECT count(*) FROM saved_segments")" -gt 0
q "UPDATE parca.columnar_dictionary c SET directory = damage_ids(s.directory) FROM saved_segments s
	WHERE (c.storage_id, c.first_entry) = (s.storage_id, s.first_entry)"
damaged_ids() { ! out=$(psql -X -qAt -c "$1" 2>&1) && grep -q "$2" <<<"$out"; }
check "damaged ids: parca_query is refused, naming the damage" damaged_ids \
	"SELECT parca_query('rep:alloc_space:bytes:space:bytes', '-infinity', 'infinity')" \
	'columnar stack dictionary segment at entry [0-9]* is damaged'
check "damaged ids: the integrity check finds them" damaged_ids \
	"SELECT * FROM parca_columnar_check('parca.samples')" 'columnar stack dictionary segment at entry [0-9]* is damaged'
q "UPDATE parca.columnar_dictionary c SET directory = s.directory FROM saved_segments s
	WHERE (c.storage_id, c.first_entry) = (s.storage_id, s.first_entry)"
check_eq "ids put back: parca_query answers as before" "$with_dictionary" "$(rep_md5 rep)"
# rep_old's stripes: those with a word dictionary of parca.samples' width
natts=$(q "SELECT count(*) FROM pg_attribute WHERE attrelid = 'parca.samples'::regclass AND attnum > 0")
stack_att=$(q "SELECT attnum - 1 FROM pg_attribute WHERE attrelid = 'parca.samples'::regclass AND attname = 'stack'")
q "UPDATE parca.columnar_stripes SET directory = strip_ids(directory)
	WHERE CASE WHEN $has_ids AND le32(directory, 4) = $natts
		THEN le32(directory, ids_chunk(directory, $stack_att) + 8) > 0 END"
check_eq "stripes without ids (version 2): parca_query answers the same" "$with_dictionary" "$(rep_md5 rep_old)"
check "stripes without ids (version 2): integrity check passes" \
	test "$(q "SELECT rows FROM parca_columnar_check('parca.samples')")" -gt 0

rm -f "$gen"
finish
