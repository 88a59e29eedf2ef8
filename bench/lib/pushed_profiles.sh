# Profiles as production pushes them, for bench/storage.sh and
# bench/merge.sh (sourced; not a bench of its own): each its own
# parca_ingest_pprof call, in time order, with its time set to its interval
# (a time_nanos field appended to the protobuf: a parser keeps the last
# value of a field).
#
# Each interval of a day: one big profile (google-pprof/large.cpu: 20,430
# stacks, two sample types, 40,860 rows) from one of 4 instances (job
# "big"), and pushed_small_per_interval small ones (the parca/*.pb.gz
# fixtures in turn, 2 to 4,661 samples; job "small").

pushed_intervals=12
pushed_small_per_interval=4
pushed_instances=4
pushed_small=()
pushed_count=0

# pushed_profiles_setup WORK: the profiles, decompressed into WORK (which
# the postgres user can read), and the SQL function that sets their time
pushed_profiles_setup() {
	local work=$1 f
	gzip -dc "$SHARED_TESTDATA/pprof/google-pprof/large.cpu" > "$work/big.pb"
	pushed_small=()
	for f in alloc_objects fgprof fib labels profile-with-labels node-profile normalizer-profile profile1; do
		gzip -dc "$SHARED_TESTDATA/pprof/parca/$f.pb.gz" > "$work/$f.pb"
		pushed_small+=("$f")
	done
	chown -R postgres: "$work"
	q "CREATE FUNCTION bench_time_field(t timestamptz) RETURNS bytea LANGUAGE plpgsql AS \$\$
DECLARE v bigint := (extract(epoch FROM t) * 1e9)::bigint; out bytea := '\\x48';
BEGIN
  LOOP
    IF v < 128 THEN RETURN out || set_byte('\\x00'::bytea, 0, v::int); END IF;
    out := out || set_byte('\\x00'::bytea, 0, (v % 128 + 128)::int);
    v := v / 128;
  END LOOP;
END \$\$" >/dev/null
}

# pushed_day_sql WORK DAY_START_EPOCH FILE: the SQL of one day's pushes
# into FILE, one statement per profile; a big profile's row reads 'B' and
# its row count, a small one's 'S'
pushed_day_sql() {
	local work=$1 day=$2 sqlf=$3 i j t ts f
	: > "$sqlf"
	for i in $(seq 0 $((pushed_intervals - 1))); do
		t=$((day + i * 86400 / pushed_intervals))
		ts="to_timestamp($t)"
		echo "SELECT 'B', parca_ingest_pprof(pg_read_binary_file('$work/big.pb') || bench_time_field($ts), 'bench', '{\"job\": \"big\", \"instance\": \"i$((i % pushed_instances))\"}');" >> "$sqlf"
		for j in $(seq 1 "$pushed_small_per_interval"); do
			f=${pushed_small[$((pushed_count % ${#pushed_small[@]}))]}
			pushed_count=$((pushed_count + 1))
			echo "SELECT 'S', parca_ingest_pprof(pg_read_binary_file('$work/$f.pb') || bench_time_field($ts + interval '$j s'), 'bench', '{\"job\": \"small\", \"instance\": \"s$((pushed_count % pushed_instances))\"}');" >> "$sqlf"
		done
	done
}
