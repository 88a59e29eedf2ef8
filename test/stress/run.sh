#!/usr/bin/env bash
# Concurrency and crash stress of parca.samples (parca_columnar): ingestion
# from two sessions (parca_ingest_pprof of real fixtures), COPY as the agent
# writes, VACUUM, parca_columnar_compact() (also cancelled half way and
# rolled back), TRUNCATE of another columnar table, and readers, all at once
# with autovacuum as eager as it gets; in rounds, each but the last ended by
# a crash (kill -9 of the postmaster, or pg_ctl stop -m immediate) at a
# random moment.  After every round: amcheck (verify_heapam, bt_index_check)
# on the stripe catalog and its TOAST, parca_columnar_check, and every
# acknowledged write present, exactly (rows and sums per series and time),
# no rolled-back one, and writes cut by the crash all there or not at all.
#
# PARCA_STRESS_SECONDS (default 120) is the load time in all, in rounds of
# PARCA_STRESS_ROUND_SECONDS (default 30): about 3 minutes in all with the
# checks.  Run it longer by hand (PARCA_STRESS_SECONDS=1200, see
# docs/columnar.md).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

TOTAL=${PARCA_STRESS_SECONDS:-120}
ROUND=${PARCA_STRESS_ROUND_SECONDS:-30}
ROUNDS=$(( (TOTAL + ROUND - 1) / ROUND ))
[ "$ROUNDS" -ge 2 ] || ROUNDS=2

start_cluster "${PARCA_STRESS_TEST_PORT:-54461}" \
	"autovacuum_naptime = 1s" "autovacuum_vacuum_cost_delay = 0" \
	"autovacuum_max_workers = 3" "log_autovacuum_min_duration = -1" \
	"log_line_prefix = '%m [%p] %b '" "max_connections = 50" \
	"parca.columnar_inline_stripe_bytes = 16kB" "parca.rollups = on"
# (small inline stripes: most writes of the bigger fixtures go on pages,
# so that VACUUM merges stripes on pages and reuses their pages)

work=$PGDATA_DIR/stress
# lines in a file the clients append to; 0 before the first line
lines_in() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
mkdir -p "$work/ops"
cp -r "$SHARED_TESTDATA/pprof" "$work/pprof"
chown -R postgres: "$work"
gen=$(cd "$(dirname "$0")" && pwd)/copy_batch.py

# every psql of the clients: errors are written to the client's log
client_psql() {
	psql -X -v ON_ERROR_STOP=1 -qAt "$@"
}

# qv SQL: its output, or its error, for a check to compare
qv() {
	q "$1" 2>&1 || true
}

# psql arguments that end a statement timeout set in the session.  A
# statement timeout that fires after a statement's last check for
# interrupts is raised by PostgreSQL in the session's next statement
# (postgres.c keeps the timeout's indicator): the first RESET may be that
# statement, the second then runs.  (A single RESET left the timeout set,
# and the check that followed it cancelled: "after a cancel: f".)
reset_timeout=(-c "RESET statement_timeout" -c "RESET statement_timeout")

# ---- setup ----

q "CREATE EXTENSION amcheck"
q "CREATE SCHEMA stress"
# autovacuum on the samples, the stripe catalog and its TOAST, as often as it runs
eager="autovacuum_vacuum_threshold = 0, autovacuum_vacuum_scale_factor = 0,
	autovacuum_vacuum_insert_threshold = 1, autovacuum_vacuum_insert_scale_factor = 0,
	autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0"
# (parca.samples is partitioned: the setting goes on each partition, also
# on those the partitions client makes)
set_eager() {
	client_psql -c "SELECT format('ALTER TABLE %s SET ($eager)', partition) FROM parca.partitions" \
		-c '\gexec' >/dev/null
}
set_eager
q "ALTER TABLE parca.columnar_stripes SET ($eager,
	toast.autovacuum_vacuum_threshold = 0, toast.autovacuum_vacuum_scale_factor = 0,
	toast.autovacuum_vacuum_insert_threshold = 1, toast.autovacuum_vacuum_insert_scale_factor = 0)"
# compaction keeps row numbers: an index must keep finding every row
q "CREATE INDEX samples_series_time ON parca.samples (series_id, time)"
# another columnar table, truncated now and then while it is written and
# compacted; without an index, so VACUUM writes its merged stripes in the
# order of a (sort_by): each row's b must still be its a's
q "CREATE TABLE stress.side (a bigint, b text) USING parca_columnar"
q "SELECT parca_columnar_set_options('stress.side', sort_by => '{a}')" >/dev/null

# fixtures: the small ones most of the time, now and then a large one
small_fixtures=(parca/fib.pb.gz parca/labels.pb.gz parca/profile-with-labels.pb.gz
	parca/fgprof.pb.gz parca/normalizer-profile.pb.gz google-pprof/sample.cpu)
for f in "$work"/pprof/parca/many/*.pb.gz; do small_fixtures+=("parca/many/${f##*/}"); done
large_fixtures=(parca/alloc_objects.pb.gz google-pprof/large.cpu)
all_fixtures=("${small_fixtures[@]}" "${large_fixtures[@]}")

# What each fixture stores, per profile type: ingested once, before any load.
q "CREATE TABLE stress.expect (fixture text, profile_type text, n bigint, total numeric,
	PRIMARY KEY (fixture, profile_type))"
for f in "${all_fixtures[@]}"; do
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$work/pprof/$f'), 'stress',
		jsonb_build_object('stress', 'ref', 'stress_fixture', '$f'))" >/dev/null
done
q "INSERT INTO stress.expect
	SELECT s.labels->>'stress_fixture', s.profile_type, count(*), sum(x.value)
	FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
	WHERE s.labels->>'stress' = 'ref' GROUP BY 1, 2"
check "every fixture stores rows" \
	test "$(q "SELECT count(DISTINCT fixture) FROM stress.expect")" = "${#all_fixtures[@]}"

# The carry-over that reset_timeout undoes, made to happen: COPY FROM
# PROGRAM waits for its program (which ignores the SIGINT the timeout
# sends to the backend's process group) without checking for interrupts,
# and ends after the end of its data without checking either, so the
# timeout fires within the COPY and is raised in the next statement.
q "CREATE TABLE stress.carry (x int)"
carry=$(client_psql -v ON_ERROR_STOP=0 -c "SET statement_timeout = '1s'" \
	-c "COPY stress.carry FROM PROGRAM 'trap \"\" INT; sleep 3'" "${reset_timeout[@]}" \
	-c "SHOW statement_timeout" 2>"$work/carry.err")
check_eq "a statement timeout fired within a statement's end: raised in the next one, then none left" \
	"ERROR:  canceling statement due to statement timeout|0" "$(cat "$work/carry.err")|$carry"

# COPY batches: the rows of batch b (the same formula as copy_batch.py)
q "CREATE FUNCTION stress.copy_expect(b bigint, OUT n bigint, OUT total numeric) LANGUAGE sql AS \$\$
	SELECT count(*), sum(b * 10 + i % 10 + 1)
	FROM generate_series(0, CASE WHEN b % 50 = 0 THEN 60000 ELSE 1 + (b * 7919) % 2500 END - 1) i
\$\$"
copy_clients=(k1 k2)
declare -A copy_series
for k in "${copy_clients[@]}"; do
	copy_series[$k]=$(q "SELECT parca_series_id('stress:alloc:bytes:space:bytes',
		'{\"stress\": \"copy\", \"stress_client\": \"$k\"}')")
done

# the writes the clients made, loaded from their logs for each check
q "CREATE TABLE stress.ops (kind text, client text, seq bigint, fixture text, outcome text)"

# What one snapshot sees must be whole: every ingest with all its rows
# under each of its profile types, every COPY batch with all its rows, the
# index and the scans agreeing, and parca_query merging the same rows.
# Prints the number of problems found.
q "CREATE FUNCTION stress.snapshot_problems() RETURNS bigint LANGUAGE sql AS \$\$
	WITH per_series AS (
		SELECT series_id, time, count(*) AS n, sum(value) AS total
		FROM parca.samples GROUP BY series_id, time),
	ingests AS (
		SELECT s.labels->>'stress_client' AS client, s.labels->>'stress_seq' AS seq,
		       s.labels->>'stress_fixture' AS fixture, s.profile_type,
		       sum(p.n) AS n, sum(p.total) AS total
		FROM per_series p JOIN parca.series s ON s.id = p.series_id
		WHERE s.labels->>'stress' = 'ingest' GROUP BY 1, 2, 3, 4),
	bad_ingests AS (
		SELECT 1 FROM ingests i LEFT JOIN stress.expect e USING (fixture, profile_type)
		WHERE (i.n, i.total) IS DISTINCT FROM (e.n, e.total)
		UNION ALL
		SELECT 1 FROM (SELECT client, seq, fixture, count(*) AS types FROM ingests GROUP BY 1, 2, 3) i
		WHERE i.types <> (SELECT count(*) FROM stress.expect e WHERE e.fixture = i.fixture)),
	bad_batches AS (
		SELECT 1 FROM per_series p JOIN parca.series s ON s.id = p.series_id,
		     stress.copy_expect(extract(epoch FROM p.time - '2024-01-01 00:00:00+00')::bigint) e
		WHERE s.labels->>'stress' = 'copy' AND (p.n, p.total) <> (e.n, e.total)),
	strays AS (
		SELECT 1 FROM per_series p LEFT JOIN parca.series s ON s.id = p.series_id
		WHERE s.labels->>'stress' IS NULL OR s.labels->>'stress' NOT IN ('ingest', 'copy', 'ref'))
	SELECT (SELECT count(*) FROM bad_ingests) + (SELECT count(*) FROM bad_batches)
	     + (SELECT count(*) FROM strays)
\$\$"

# ---- the load ----

stop_file=$work/stop

# ingest_client NAME: parca_ingest_pprof in a loop; most commit on their
# own, some in a transaction that rolls back, some with a savepoint rolled
# back before the commit.  Writes "ingest NAME SEQ FIXTURE OUTCOME" to its
# ops log, OUTCOME ack (committed and acknowledged), rollback (never to be
# seen) or error (unknown: cut by a crash).
ingest_client() {
	local c=$1 seq f f2 mode ops=$work/ops/ingest.$1 next=$work/next.$1
	seq=$(cat "$next" 2>/dev/null || echo 0)
	ingest_sql() {
		echo "SELECT parca_ingest_pprof(pg_read_binary_file('$work/pprof/$2'), 'stress',
			jsonb_build_object('stress', 'ingest', 'stress_client', '$c',
			                   'stress_seq', '$1', 'stress_fixture', '$2'))"
	}
	while [ ! -e "$stop_file" ]; do
		seq=$((seq + 2))
		echo "$seq" > "$next"
		if [ $((RANDOM % 12)) = 0 ]; then
			f=${large_fixtures[RANDOM % ${#large_fixtures[@]}]}
		else
			f=${small_fixtures[RANDOM % ${#small_fixtures[@]}]}
		fi
		f2=${small_fixtures[RANDOM % ${#small_fixtures[@]}]}
		mode=$((RANDOM % 10))
		if [ "$mode" -lt 7 ]; then
			if client_psql -c "$(ingest_sql "$seq" "$f")" >/dev/null 2>>"$work/err.$c"; then
				echo "ingest $c $seq $f ack"
			else
				echo "ingest $c $seq $f error"
			fi >> "$ops"
		elif [ "$mode" = 7 ]; then
			client_psql -c "BEGIN" -c "$(ingest_sql "$seq" "$f")" -c "ROLLBACK" \
				>/dev/null 2>>"$work/err.$c" || true
			echo "ingest $c $seq $f rollback" >> "$ops"
		else
			if client_psql -c "BEGIN" -c "$(ingest_sql "$((seq - 1))" "$f2")" -c "SAVEPOINT s" \
				-c "$(ingest_sql "$seq" "$f")" -c "ROLLBACK TO s" \
				-c "$(ingest_sql "$((seq + 1))" "$f2")" -c "COMMIT" >/dev/null 2>>"$work/err.$c"; then
				echo "ingest $c $((seq - 1)) $f2 ack"
				echo "ingest $c $((seq + 1)) $f2 ack"
			else
				echo "ingest $c $((seq - 1)) $f2 error"
				echo "ingest $c $((seq + 1)) $f2 error"
			fi >> "$ops"
			echo "ingest $c $seq $f rollback" >> "$ops"
			seq=$((seq + 1))
			echo "$seq" > "$next"
		fi
	done
}

# copy_client NAME: binary COPY batches into parca.samples as the agent
# writes them, one series per client, batch b at 2024-01-01 + b s; most
# commit on their own, some roll back, some share a transaction.
copy_client() {
	local k=$1 b mode first second ops=$work/ops/copy.$1 next=$work/next.$1 sid=${copy_series[$1]}
	local copy_sql="COPY parca.samples (time, series_id, stack, value, period, duration) FROM STDIN (FORMAT binary)"
	b=$(cat "$next" 2>/dev/null || echo 0)
	while [ ! -e "$stop_file" ]; do
		b=$((b + 1))
		echo "$b" > "$next"
		mode=$((RANDOM % 10))
		if [ "$mode" -lt 8 ]; then
			if python3 "$gen" "$sid" "$b" | client_psql -c "$copy_sql" >/dev/null 2>>"$work/err.$k"; then
				echo "copy $k $b - ack"
			else
				echo "copy $k $b - error"
			fi >> "$ops"
		elif [ "$mode" = 8 ]; then
			python3 "$gen" "$sid" "$b" | client_psql -c "BEGIN" -c "$copy_sql" -c "ROLLBACK" \
				>/dev/null 2>>"$work/err.$k" || true
			echo "copy $k $b - rollback" >> "$ops"
		else
			# two batches in one transaction: server-side COPY of files
			python3 "$gen" "$sid" "$b" > "$work/$k.1"
			python3 "$gen" "$sid" "$((b + 1))" > "$work/$k.2"
			chown postgres: "$work/$k.1" "$work/$k.2"
			first="'$work/$k.1'"
			second="'$work/$k.2'"
			if client_psql -c "BEGIN" -c "${copy_sql/STDIN/$first}" \
				-c "${copy_sql/STDIN/$second}" -c "COMMIT" >/dev/null 2>>"$work/err.$k"; then
				echo "copy $k $b - ack"
				echo "copy $k $((b + 1)) - ack"
			else
				echo "copy $k $b - error"
				echo "copy $k $((b + 1)) - error"
			fi >> "$ops"
			b=$((b + 1))
			echo "$b" > "$next"
		fi
	done
}

# every partition of parca.samples compacted
compact_samples="SELECT sum(parca_columnar_compact(partition)) FROM parca.partitions"

# partitions: parca_maintain_partitions() every second or two, which moves
# the rows written into the default partition (the fixtures' times and the
# COPY clients' have no partition at first) into partitions of their own,
# while everything else runs.  Its DDL gives up after its lock_timeout
# when a reader holds it up; the next call tries again.
partitions_client() {
	local log=$work/err.partitions
	while [ ! -e "$stop_file" ]; do
		client_psql -c "SELECT * FROM parca_maintain_partitions()" >/dev/null 2>>"$log" || true
		set_eager 2>>"$log" || true
		sleep 1.$((RANDOM % 9))
	done
}

# maintenance: VACUUM and parca_columnar_compact() over and over; some
# compactions cancelled half way (statement_timeout) or rolled back; the
# stripe catalog vacuumed; the side table truncated.
maintenance_client() {
	local i=0 log=$work/err.maint
	while [ ! -e "$stop_file" ]; do
		i=$((i + 1))
		client_psql -c "VACUUM parca.samples" 2>>"$log" || true
		client_psql -c "$compact_samples" >/dev/null 2>>"$log" || true
		case $((i % 6)) in
			1) client_psql -c "SET statement_timeout = '$((RANDOM % 40 + 5))ms'" \
				-c "$compact_samples" >/dev/null 2>>"$log" || true ;;
			2) client_psql -c "BEGIN" -c "$compact_samples" -c "ROLLBACK" \
				>/dev/null 2>>"$log" || true ;;
			3) client_psql -c "VACUUM parca.columnar_stripes" 2>>"$log" || true ;;
			4) client_psql -c "TRUNCATE stress.side" 2>>"$log" || true ;;
			5) client_psql -c "VACUUM stress.side" -c "SELECT parca_columnar_compact('stress.side')" \
				>/dev/null 2>>"$log" || true ;;
		esac
		sleep 0.$((RANDOM % 5))
	done
}

# side writer: small commits into the side table, each compacting it in time
side_client() {
	local i=0
	while [ ! -e "$stop_file" ]; do
		i=$((i + 1))
		client_psql -c "INSERT INTO stress.side SELECT g, 'row ' || g FROM generate_series(1, $((RANDOM % 300 + 1))) g" \
			>/dev/null 2>>"$work/err.side" || true
	done
}

# reader: in one snapshot, is every write whole, do index and scans agree,
# does parca_query merge the same rows; and plain counts.  A wrong answer
# goes to the readers' log.
reader_client() {
	local out copies turn=0 ok=true workers
	copies=$(IFS=,; echo "${copy_series[*]}")
	while [ ! -e "$stop_file" ]; do
		# through the rollups: the copy writers write into hours of 2024
		# that the maintenance worker rolls up meanwhile, and an hour
		# written into since its roll-up is read from raw rows until it is
		# rolled up again (docs/rollups.md), so the merge is the rows' sum
		out=$(client_psql -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
			-c "SELECT stress.snapshot_problems()" \
			-c "SELECT coalesce(parca_profile_total(parca_query('stress:alloc:bytes:space:bytes{stress=\"copy\"}',
				'-infinity', 'infinity')), 0) = coalesce(sum(value), 0)
				FROM parca.samples WHERE series_id IN ($copies)" \
			-c "SET LOCAL enable_seqscan = off" -c "SET LOCAL parca.columnar_enable_custom_scan = off" \
			-c "SELECT count(*) || '/' || coalesce(sum(value), 0) FROM parca.samples WHERE series_id IN ($copies)" \
			-c "RESET enable_seqscan" -c "SET LOCAL enable_indexscan = off" -c "SET LOCAL enable_bitmapscan = off" \
			-c "RESET parca.columnar_enable_custom_scan" \
			-c "SELECT count(*) || '/' || coalesce(sum(value), 0) FROM parca.samples WHERE series_id IN ($copies)" \
			-c "COMMIT" 2>>"$work/err.reader") || continue
		# expected: 0, t, then the same count/sum by index and by scan
		mapfile -t lines <<<"$out"
		if [ "${lines[0]}" != 0 ] || [ "${lines[1]}" != t ] || [ "${lines[2]}" != "${lines[3]}" ]; then
			echo "$(date +%T) $out" | tr '\n' ' ' >> "$work/bad_reads"
			echo >> "$work/bad_reads"
		fi
		client_psql -c "SELECT count(*), sum(value) FROM parca.samples" >/dev/null 2>>"$work/err.reader" || true
		client_psql -c "SELECT count(*) FROM (SELECT stack, sum(value) FROM parca.samples
			WHERE time >= '2024-01-01' GROUP BY stack) g" >/dev/null 2>>"$work/err.reader" || true
		# a parca_query cancelled half way (or not), then in the same
		# session one that must merge what SQL sums: the cancelled scans'
		# buffers, which the backend keeps for the next scans, come back
		# whole and unshared (columnar_scratch.c).  Only the check's own
		# answer counts: one that did not answer (cancelled by a timeout
		# carried over, see reset_timeout) is not a wrong total.  Every
		# other time both merges are shared with two parallel workers
		# (however few the rows), which the cancel may stop at any point:
		# reading, sending, exiting while the backend writes the profile.
		if [ $((++turn % 2)) -eq 0 ]; then
			workers=(-c "SET max_parallel_workers_per_gather = 2" -c "SET min_parallel_table_scan_size = 0"
				-c "SET client_min_messages = debug1")
		else
			workers=()
		fi
		out=$(client_psql -v ON_ERROR_STOP=0 "${workers[@]}" -c "SET statement_timeout = '$((RANDOM % 20 + 1))ms'" \
			-c "SELECT parca_query('stress:alloc:bytes:space:bytes{stress=\"copy\"}', '-infinity', 'infinity') IS NULL" \
			"${reset_timeout[@]}" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
			-c "SELECT 'merge = sum: ' || (coalesce(parca_profile_total(parca_query('stress:alloc:bytes:space:bytes{stress=\"copy\"}',
				'-infinity', 'infinity')), 0) = coalesce(sum(value), 0))
				FROM parca.samples WHERE series_id IN ($copies)" \
			-c "COMMIT" 2>"$work/reader.messages") || ok=false
		grep -v '^DEBUG:  ' "$work/reader.messages" >> "$work/err.reader" || true
		grep -q '^DEBUG:  parallel merge of [0-9]* tables: [1-9]' "$work/reader.messages" &&
			echo x >> "$work/parallel_merges"
		[ "$ok" = true ] || { ok=true; continue; }
		case "$(grep '^merge = sum: ' <<<"$out")" in
			"merge = sum: true") echo x >> "$work/cancel_checks" ;;
			"") echo x >> "$work/cancel_unchecked" ;;
			*)
				echo "$(date +%T) after a cancel: $out" | tr '\n' ' ' >> "$work/bad_reads"
				echo >> "$work/bad_reads"
				;;
		esac
		echo x >> "$work/reads"
	done
}

# ---- the checks after each round ----

# Every acknowledged write there, exactly; no rolled-back one; writes cut
# by the crash whole or absent (stress.snapshot_problems); nothing else.
check_writes() {
	local label=$1
	q "TRUNCATE stress.ops"
	cat "$work"/ops/* 2>/dev/null | psql -X -qAt -v ON_ERROR_STOP=1 \
		-c "COPY stress.ops FROM STDIN WITH (FORMAT text, DELIMITER ' ')"
	q "CREATE OR REPLACE VIEW stress.found AS
		SELECT 'ingest' AS kind, s.labels->>'stress_client' AS client,
		       (s.labels->>'stress_seq')::bigint AS seq
		FROM parca.series s WHERE s.labels->>'stress' = 'ingest'
		  AND EXISTS (SELECT 1 FROM parca.samples x WHERE x.series_id = s.id)
		UNION
		SELECT 'copy', s.labels->>'stress_client',
		       extract(epoch FROM x.time - '2024-01-01 00:00:00+00')::bigint
		FROM parca.samples x JOIN parca.series s ON s.id = x.series_id
		WHERE s.labels->>'stress' = 'copy'"
	local acked missing rolled_back unknown_found unknown_total strays problems
	acked=$(qv "SELECT count(*) FROM stress.ops WHERE outcome = 'ack'")
	missing=$(qv "SELECT count(*) FROM stress.ops o WHERE outcome = 'ack'
		AND NOT EXISTS (SELECT 1 FROM stress.found f WHERE (f.kind, f.client, f.seq) = (o.kind, o.client, o.seq))")
	rolled_back=$(qv "SELECT count(*) FROM stress.ops o WHERE outcome = 'rollback'
		AND EXISTS (SELECT 1 FROM stress.found f WHERE (f.kind, f.client, f.seq) = (o.kind, o.client, o.seq))")
	unknown_total=$(qv "SELECT count(*) FROM stress.ops WHERE outcome = 'error'")
	unknown_found=$(qv "SELECT count(*) FROM stress.ops o WHERE outcome = 'error'
		AND EXISTS (SELECT 1 FROM stress.found f WHERE (f.kind, f.client, f.seq) = (o.kind, o.client, o.seq))")
	strays=$(qv "SELECT count(*) FROM stress.found f WHERE NOT EXISTS
		(SELECT 1 FROM stress.ops o WHERE (f.kind, f.client, f.seq) = (o.kind, o.client, o.seq))")
	problems=$(qv "SELECT stress.snapshot_problems()")
	echo "# $label: $acked writes acknowledged, $unknown_total cut by the crash ($unknown_found of them committed)"
	check "$label: some writes were acknowledged" test "$acked" -gt 0
	check_eq "$label: every acknowledged write is there" 0 "$missing"
	check_eq "$label: no rolled-back write is there" 0 "$rolled_back"
	check_eq "$label: no write that nobody made" 0 "$strays"
	check_eq "$label: every write whole (rows and sums per series and time), none twice" 0 "$problems"
}

check_storage() {
	local label=$1 rows count toast
	toast=$(qv "SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'parca.columnar_stripes'::regclass")
	check_eq "$label: verify_heapam of parca.columnar_stripes and its TOAST" "" \
		"$(qv "SELECT * FROM verify_heapam('parca.columnar_stripes', check_toast => true)
			UNION ALL SELECT * FROM verify_heapam('$toast')")"
	check_eq "$label: bt_index_check of the stripe catalog's, its TOAST's and the samples' indexes" \
		"$(qv "SELECT 3 + count(*) FROM parca.partitions")" \
		"$(qv "SELECT count(bt_index_check(i, heapallindexed => true)) FROM unnest(ARRAY[
			'parca.columnar_stripes_pkey', 'parca.columnar_stripes_inline',
			(SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$toast'::regclass)]
			|| ARRAY(SELECT relid FROM pg_partition_tree('parca.samples_series_time') WHERE isleaf)) i")"
	rows=$(qv "SELECT sum(c.rows) FROM parca.partitions p, parca_columnar_check(p.partition) c")
	count=$(qv "SELECT count(*) FROM parca.samples")
	echo "# $label: $(qv "SELECT sum(rows) || ' rows in ' || sum(stripes) || ' stripes (' || sum(inline_stripes)
		|| ' inline, ' || sum(data_blocks) || ' data blocks) in ' || count(*) || ' partitions'
		FROM parca.partitions p, parca_columnar_check(p.partition)")"
	check_eq "$label: parca_columnar_check passes and counts every row" "$count" "$rows"
	# a writer that chose the default partition while a partition was
	# attached must not have put rows there that the new one holds
	check_eq "$label: every row in the partition of its time" 0 \
		"$(qv "SELECT count(*) FROM parca.samples s JOIN parca.partitions p ON p.partition = s.tableoid
		       WHERE NOT p.is_default AND NOT (s.time >= p.range_start AND s.time < p.range_end)
		          OR p.is_default AND EXISTS (SELECT FROM parca.partitions q WHERE NOT q.is_default
		                                      AND s.time >= q.range_start AND s.time < q.range_end)")"
	check_eq "$label: parca_columnar_check of the truncated side table, and its rows" \
		"$(qv "SELECT count(*) FROM stress.side")" "$(qv "SELECT rows FROM parca_columnar_check('stress.side')")"
	check_eq "$label: the side table's rows whole after VACUUM reordered them" 0 \
		"$(qv "SELECT count(*) FROM stress.side WHERE b IS DISTINCT FROM 'row ' || a")"
}

# Client errors other than a crash's: none expected.  (A compaction
# cancelled by its statement_timeout is expected; its log is apart.)
check_client_errors() {
	local label=$1 errors
	errors=$(cat "$work"/err.* 2>/dev/null | grep -E 'ERROR|WARNING' |
		grep -vE 'canceling statement due to (statement|lock) timeout' || true)
	check_eq "$label: no client saw an error or warning" "" "$errors"
	rm -f "$work"/err.*
}

# A crash ends connections: what the clients saw after it is not checked.
forget_client_errors() {
	rm -f "$work"/err.*
}

# The server log: no error but those expected under this load.  A
# parallel merge's leader cancelled by its statement timeout before one of
# its workers attached ends the shared memory that worker then cannot map:
# PostgreSQL's ParallelWorkerMain says so (any cancelled parallel query
# can), and the worker has nothing to undo.
check_server_log() {
	local label=$1 errors
	errors=$(grep -E '(ERROR|WARNING|PANIC):' "$PGDATA_DIR/log" |
		grep -vE 'canceling statement due to (statement|lock) timeout|canceling autovacuum task' |
		grep -vE 'parallel worker ERROR:  could not map dynamic shared memory segment$' || true)
	check_eq "$label: no unexpected error in the server log" "" "$(head -c 2000 <<<"$errors")"
	: > "$PGDATA_DIR/log"
}

# ---- rounds ----

for round in $(seq 1 "$ROUNDS"); do
	rm -f "$stop_file"
	pids=()
	ingest_client i1 & pids+=($!)
	ingest_client i2 & pids+=($!)
	for k in "${copy_clients[@]}"; do copy_client "$k" & pids+=($!); done
	maintenance_client & pids+=($!)
	partitions_client & pids+=($!)
	side_client & pids+=($!)
	reader_client & pids+=($!)
	if [ "$round" -lt "$ROUNDS" ]; then
		# a crash at a random moment of the round's second half; the
		# clients start nothing new after it
		sleep $((ROUND / 2 + RANDOM % (ROUND / 2 + 1)))
		touch "$stop_file"
		if [ $((round % 2)) = 1 ]; then
			how="kill -9"
			kill_cluster
		else
			how="pg_ctl stop -m immediate"
			runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA_DIR/data" -m immediate stop >/dev/null
		fi
		for p in "${pids[@]}"; do wait "$p" || true; done
		forget_client_errors
		restart_cluster
		label="round $round, after $how"
	else
		sleep "$ROUND"
		touch "$stop_file"
		for p in "${pids[@]}"; do wait "$p" || true; done
		check_client_errors "round $round"
		label="round $round, at rest"
	fi
	echo "# $label: $(lines_in "$work/reads") consistency reads so far," \
		"$(lines_in "$work/cancel_checks") checks after a cancel" \
		"($(lines_in "$work/cancel_unchecked") not answered: cancelled by a timeout carried over)"
	check_writes "$label"
	check_storage "$label"
	check_server_log "$label"
done

# every small stripe merged at rest: still the same rows
q "VACUUM parca.samples"
q "$compact_samples" >/dev/null
check_writes "after a full compaction"
check_storage "after a full compaction"
# merging by size ratio leaves partial stripes each bigger than all newer
# ones together: at most log2(1,000,000 rows) + 1 of them in a partition,
# besides the full ones
check "at most 21 partial stripes in any partition after a full compaction" \
	test "$(q "SELECT coalesce(max(c.stripes - c.rows / 1000000), 0)
	           FROM parca.partitions p, parca_columnar_check(p.partition) c")" -le 21
check_eq "the readers never saw a torn, doubled or missing write" "" "$(cat "$work/bad_reads" 2>/dev/null)"
# the rollups made under the load (by the worker, whose rounds may or
# may not have come) give the raw merge, as they are and caught up by
# hand: every series, and the copies with their late rows
check "hours were rolled up" test "$(q "SELECT count(*) FROM parca.rollup_hours")" -gt 0
for sel in 'stress:alloc:bytes:space:bytes' 'stress:alloc:bytes:space:bytes{stress="copy"}'; do
	check_eq "through rollups, as the load left them, $sel is the raw merge" \
		"$(q "SET parca.rollups = off; SELECT md5(parca_query('$sel', '-infinity', 'infinity')::text)")" \
		"$(q "SELECT md5(parca_query('$sel', '-infinity', 'infinity')::text)")"
done
q "SELECT * FROM parca_rollup_hours('-infinity', 'infinity')" >/dev/null
for sel in 'stress:alloc:bytes:space:bytes' 'stress:alloc:bytes:space:bytes{stress="copy"}'; do
	check_eq "through rollups, caught up, $sel is the raw merge" \
		"$(q "SET parca.rollups = off; SELECT md5(parca_query('$sel', '-infinity', 'infinity')::text)")" \
		"$(q "SELECT md5(parca_query('$sel', '-infinity', 'infinity')::text)")"
	# and its time series, by hour from the hours' sums
	range="SELECT md5(string_agg(r::text, ',' ORDER BY r.time, r.series)) FROM parca_query_range('$sel', '-infinity', 'infinity', '1 hour') r"
	check_eq "through the hours' sums, caught up, $sel's time series is the raw one" \
		"$(q "SET parca.rollups = off; $range")" "$(q "$range")"
done
check "the readers read (consistency reads: $(lines_in "$work/reads"))" \
	test -s "$work/reads"
check "the checks after a cancel answered ($(lines_in "$work/cancel_checks"))" \
	test -s "$work/cancel_checks"
check "parca_query merged with parallel workers under the load ($(lines_in "$work/parallel_merges") times)" \
	test -s "$work/parallel_merges"
finish
