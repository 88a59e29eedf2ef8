#!/usr/bin/env bash
# Upgrading a database that holds data from release 0.1 to this build:
# 0.1 (commit 61a0360) is built from `git archive` in a temporary folder
# and installed into a private copy of PostgreSQL's folders (PostgreSQL
# finds its share/ and lib/ relative to its programs), so the system's
# install stays this build's.  A cluster made by the 0.1 copy gets real
# profiles, agent-like rows and scrape configuration; then this build's
# PostgreSQL opens it: the library refuses to write until ALTER EXTENSION
# parca UPDATE, after which the old data answers as before, new data goes
# in, and the schema equals a fresh install's (pg_dump of the extension's
# objects, --binary-upgrade, which lists them one by one).  About a
# minute, most of it building 0.1.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
require_fixtures

OLD_COMMIT=61a0360
OLD_VERSION=0.1
NEW_VERSION=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$REPO_ROOT/parca.control")
port=$(( ${PARCA_UPGRADE_TEST_PORT:-54481} + ${PARCA_TEST_PORT_OFFSET:-0} ))
work=$(mktemp -d /tmp/parca-upgrade.XXXXXX)
chmod 755 "$work"
# PARCA_UPGRADE_KEEP=DIR: keep the work folder there (the dumps, the
# logs), to see what a missing upgrade step leaves different.
cleanup() {
	[ -d "$work/data" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1
	[ -d "$work/data" ] && runuser -u postgres -- "$old_bin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1
	[ -n "${PARCA_UPGRADE_KEEP:-}" ] && rm -rf "$PARCA_UPGRADE_KEEP" && cp -a "$work" "$PARCA_UPGRADE_KEEP"
	rm -rf "$work"
}
trap cleanup EXIT

# --- 0.1, built and installed privately -------------------------------------
pkglibdir=$(pg_config --pkglibdir)
sharedir=$(pg_config --sharedir)
old_root=$work/old
old_bin=$old_root$PG_BIN
mkdir -p "$work/src" "$old_root$(dirname "$pkglibdir")" "$old_root$(dirname "$sharedir")"
if ! git -c safe.directory='*' -C "$REPO_ROOT" archive "$OLD_COMMIT" | tar -x -C "$work/src"; then
	echo "FAIL - git archive $OLD_COMMIT (the test needs the repository's history)"
	exit 1
fi
if ! make -s -C "$work/src" -j2 parca.so "parca--$OLD_VERSION.sql" >"$work/build.log" 2>&1; then
	tail -20 "$work/build.log"
	echo "FAIL - building $OLD_VERSION"
	exit 1
fi
# Debian: programs and libraries in /usr/lib/postgresql/15, share in
# /usr/share/postgresql/15; both copied under $old_root.
cp -a "$(dirname "$PG_BIN")" "$old_root$(dirname "$(dirname "$PG_BIN")")/"
cp -a "$sharedir" "$old_root$(dirname "$sharedir")/"
rm -f "$old_root$sharedir"/extension/parca[.-]* "$old_root$pkglibdir/parca.so"
install -m 755 "$work/src/parca.so" "$old_root$pkglibdir/parca.so"
install -m 644 "$work/src/parca.control" "$work/src/parca--$OLD_VERSION.sql" "$old_root$sharedir/extension/"
check_eq "the private copy is 0.1's" "$OLD_VERSION" \
	"$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$old_root$sharedir/extension/parca.control")"

# --- a 0.1 database holding data ---------------------------------------------
chown postgres: "$work"
runuser -u postgres -- "$old_bin/initdb" -D "$work/data" -A trust -U postgres >/dev/null
{
	echo "port = $port"
	echo "listen_addresses = '127.0.0.1'"
	echo "unix_socket_directories = '$work'"
	echo "shared_preload_libraries = 'parca'"
	echo "fsync = off"
} >> "$work/data/postgresql.conf"
start_with() {
	local try
	for try in $(seq 1 40); do
		runuser -u postgres -- "$1/pg_ctl" -D "$work/data" -l "$work/log" -w start >/dev/null 2>&1 && return 0
		sleep 2
	done
	tail -5 "$work/log"
	return 1
}
stop_with() {
	runuser -u postgres -- "$1/pg_ctl" -D "$work/data" -w stop >/dev/null
}
start_with "$old_bin" || { echo "FAIL - starting 0.1's PostgreSQL"; exit 1; }
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=postgres
q "CREATE EXTENSION parca"
check_eq "0.1 installed" "$OLD_VERSION" "$(q "SELECT extversion FROM pg_extension WHERE extname = 'parca'")"

fixtures=(parca/profile1.pb.gz parca/alloc_objects.pb.gz parca/labels.pb.gz parca/fib.pb.gz
          google-pprof/large.cpu)
mkdir -p "$work/fx"
for f in "${fixtures[@]}"; do cp "$SHARED_TESTDATA/pprof/$f" "$work/fx/$(basename "$f")"; done
chmod -R a+r "$work/fx"
ingest_all() {
	local f n=0
	for f in "${fixtures[@]}"; do
		n=$((n + 1))
		q "SELECT parca_ingest_pprof(pg_read_binary_file('$work/fx/$(basename "$f")'), 'p$n',
		                              '{\"job\": \"upgrade\", \"round\": \"$1\"}')" >/dev/null || return 1
	done
}
check "0.1: fixtures ingested" ingest_all old
# Rows as the 0.1 agent wrote them: its own INSERTs into the metastore
# (here through parca_register_location) and samples naming the ids.
agent_rows() {
	q "INSERT INTO parca.samples (time, series_id, stack, value, period, duration)
	   SELECT '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 s',
	          parca_series_id('parca_agent:samples:count:cpu:nanoseconds:delta', '{\"node\": \"n1\"}'),
	          ('{' || lpad(to_hex(parca_register_location('{\"address\": \"0x10\", \"build_id\": \"b1\",
	                 \"file\": \"/bin/w\", \"lines\": [{\"function\": \"leaf\", \"line\": 3}]}')), 16, '0') || ','
	               || lpad(to_hex(parca_register_location('{\"address\": \"0x20\", \"build_id\": \"b1\",
	                 \"file\": \"/bin/w\", \"lines\": [{\"function\": \"main\", \"line\": 9}]}')), 16, '0')
	               || '}')::stacktrace,
	          g, 52631578, 10000000000
	   FROM generate_series(1, 50) g" >/dev/null
}
check "0.1: agent-like rows" agent_rows
check "0.1: scrape configuration" q "INSERT INTO parca.scrape_jobs (job_name, scrape_interval) VALUES ('api', '1h');
	INSERT INTO parca.scrape_targets (job_name, address, labels) VALUES ('api', '127.0.0.1:9', '{\"team\": \"x\"}')"

# What the old data answers: per profile type, top functions and totals.
answers() {
	q "SELECT s.profile_type, t.* FROM (SELECT DISTINCT profile_type FROM parca.series) s,
	          parca_top(parca_query(s.profile_type || '{round!=\"new\"}', '-infinity', 'infinity')) t
	   ORDER BY 1, t.flat DESC, t.function, t.file"
	q "SELECT s.profile_type, parca_profile_total(parca_query(s.profile_type || '{round!=\"new\"}', '-infinity', 'infinity'))
	   FROM (SELECT DISTINCT profile_type FROM parca.series) s ORDER BY 1"
	q "SELECT job_name, address, labels FROM parca.scrape_targets ORDER BY 1, 2"
}
answers > "$work/before.txt"
check "0.1: the old data answers" test "$(wc -l < "$work/before.txt")" -gt 20
stop_with "$old_bin"

# --- this build's PostgreSQL on the 0.1 database ------------------------------
start_with "$PG_BIN" || { echo "FAIL - starting this build's PostgreSQL"; exit 1; }
check_eq "before the update: still $OLD_VERSION" "$OLD_VERSION" \
	"$(q "SELECT extversion FROM pg_extension WHERE extname = 'parca'")"
# The library is newer than the database's SQL: writes are refused, with
# the remedy, and nothing is stored.
err=$(psql -X -qAt -c "SELECT parca_ingest_pprof(pg_read_binary_file('$work/fx/profile1.pb.gz'), 'refused')" 2>&1)
check "before the update: ingest refused, saying to run ALTER EXTENSION parca UPDATE" \
	grep -q "ALTER EXTENSION parca UPDATE" <<<"$err"
check "before the update: it names both versions" \
	grep -q "version $OLD_VERSION in this database, but its library is version $NEW_VERSION" <<<"$err"
check_eq "before the update: nothing stored" "0" \
	"$(q "SELECT count(*) FROM parca.series WHERE profile_type LIKE 'refused:%'")"

check "ALTER EXTENSION parca UPDATE" q "ALTER EXTENSION parca UPDATE"
check_eq "updated to $NEW_VERSION" "$NEW_VERSION" "$(q "SELECT extversion FROM pg_extension WHERE extname = 'parca'")"
# the partitions the update made (the default one, and 0.1's table) read
# only through their parent, as a fresh install's do (sql/47_row_security.sql)
check_eq "every partition has row-level security" "t" \
	"$(q "SELECT count(*) >= 2 AND bool_and(c.relrowsecurity) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	      WHERE i.inhparent IN ('parca.samples'::regclass, 'parca.samples_hourly'::regclass,
	                            'parca.samples_daily'::regclass, 'parca.samples_weekly'::regclass)")"
answers > "$work/after.txt"
check "the old data answers as before" diff "$work/before.txt" "$work/after.txt"
check "new profiles are stored" ingest_all new
# The same profiles stored by 0.1 and by this build answer alike.
round() {
	q "SELECT s.profile_type, t.* FROM (SELECT DISTINCT profile_type FROM parca.series
	                                    WHERE profile_type LIKE 'p_:%') s,
	          parca_top(parca_query(s.profile_type || '{round=\"$1\"}', '-infinity', 'infinity')) t
	   ORDER BY 1, t.flat DESC, t.function, t.file"
}
check_eq "profiles stored by 0.1 and by $NEW_VERSION answer alike" "$(round old)" "$(round new)"
check_eq "the write protocol is there" "1" "$(q "SELECT parca_write_protocol()")"
check "the old agent's locations are found by id" \
	test "$(q "SELECT count(*) FROM parca.locations l JOIN parca.functions f ON f.id = l.function_ids[1]
	            WHERE f.name IN ('leaf', 'main')")" = 2

# --- the same schema as a fresh install ---------------------------------------
q "CREATE DATABASE fresh" >/dev/null
PGDATABASE=fresh q "CREATE EXTENSION parca" >/dev/null
# --binary-upgrade dumps each member of the extension.  Normalized away:
# OIDs, transaction ids, the dump's random \restrict key, the sequence's
# position (data), and the order of grants on one object (an ACL lists
# its grantees in the order the grants were made: the update grants to
# parca_agent after parca_scrape_worker, a fresh install before); grants
# are compared as a sorted list.  The dated partitions of parca.samples
# are data, not schema: the update attaches the old rows' table as one,
# and the maintenance worker makes the current periods' (in the database
# it keeps); only the parent and its default partition are compared.
schema() {
	runuser -u postgres -- "$PG_BIN/pg_dump" -h "$work" -p "$port" --schema-only --binary-upgrade \
		--exclude-table='parca.samples_2*' --exclude-table='parca.samples_until_*' "$1" |
		grep -v -e 'binary_upgrade_set_next_' -e '^-- Dumped' -e '^--$' -e '^\\\(un\)\?restrict ' \
			-e '^SELECT pg_catalog.setval(' |
		sed -e "s/'[0-9]*'::pg_catalog.oid/OID/g" -e "s/'{[0-9,]*}'/OIDS/g" \
			-e "s/relfrozenxid = '[0-9]*'/relfrozenxid = XID/" -e "s/^WHERE oid = '[0-9]*';/WHERE oid = OID;/" \
		>"$work/$1.dump"
	grep -v -e '^GRANT ' -e '^REVOKE ' "$work/$1.dump"
	grep -e '^GRANT ' -e '^REVOKE ' "$work/$1.dump" | sort
}
schema postgres > "$work/upgraded.sql"
schema fresh > "$work/fresh.sql"
check "the dump lists the extension's objects" grep -q "parca_store_locations" "$work/fresh.sql"
diff -u "$work/fresh.sql" "$work/upgraded.sql" > "$work/schema.diff"
check "the updated schema equals a fresh install's" test ! -s "$work/schema.diff"
head -150 "$work/schema.diff"
finish
