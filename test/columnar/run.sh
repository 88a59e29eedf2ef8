#!/usr/bin/env bash
# End-to-end tests of the parca_columnar access method that need more than
# one session or a crash: kill -9 during COPY, kill -9 after commit (WAL
# replay), concurrent writers, pg_dump/pg_restore round trip, physical
# replication to a streaming standby.
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
explain=$(psql -X -qAt -h "$standby" -p "$STANDBY_PORT" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM rep WHERE time < '2026-01-01 00:00:30+00'")
check "standby: chunk skipping works there too" grep -q 'Chunk Groups Skipped: [1-9]' <<<"$explain"

rm -f "$gen"
finish
