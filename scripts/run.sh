#!/usr/bin/env bash
# The main job on a local embedded default: builds and installs parca,
# starts the project's own PostgreSQL cluster (.parca/ under the project
# folder, port 54329, database "parca"), ingests the pprof fixtures and
# prints the hottest functions; then profiles this machine for 20 s with
# parca-agent and prints its hottest functions; then starts parca-server
# beside the cluster (127.0.0.1:7070, its log in .parca/parca-server.log)
# and prints how to point a profiler's SDK at it; last, the address of its
# web UI (docs/web.md).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

bash scripts/deps.sh
make -s -j2
make -s install
make -s -j2 agent
make -s install-agent
make -s -j2 server
make -s install-server
. scripts/cluster.sh
cluster_start "$repo"

fixtures=$repo/../shared/testdata/pprof
stage=$(mktemp -d)
chmod 755 "$stage"
for f in "$fixtures"/parca/*.pb.gz "$fixtures"/parca/many/*.pb.gz "$fixtures"/google-pprof/large.cpu; do
	[ -f "$f" ] || continue
	cp "$f" "$stage/"
	name=$(basename "$f")
	job=fixtures
	rows=$(psql -X -qAt -c "SELECT parca_ingest_pprof(pg_read_binary_file('$stage/$name'), 'fixture', jsonb_build_object('job', '$job', 'file', '$name'))")
	echo "ingested $name: $rows sample rows"
done
rm -rf "$stage"

echo
echo "Hottest functions of the CPU profiles stored (go tool pprof -top order):"
psql -X -P pager=off -c "
SELECT function, round(flat / 1e9, 2) AS flat_s, round(flat_percent::numeric, 2) AS flat_pct,
       round(cum / 1e9, 2) AS cum_s, round(cum_percent::numeric, 2) AS cum_pct
FROM parca_top(parca_query('fixture:cpu:nanoseconds:cpu:nanoseconds:delta{job=\"fixtures\"}',
                           '-infinity', 'infinity'))
ORDER BY flat DESC LIMIT 15"
echo
echo "Profiling this machine with parca-agent (eBPF, 19 Hz per CPU) for 20 s..."
"$repo/agent/parca-agent" --duration 20 --flush-interval 10 2>&1 | grep -E "error|done:" || true
echo "Hottest functions on this machine in the last minute (parca-agent):"
psql -X -P pager=off -c "
SELECT function, round(flat / 1e9, 2) AS flat_s, round(flat_percent::numeric, 2) AS flat_pct,
       round(cum / 1e9, 2) AS cum_s, round(cum_percent::numeric, 2) AS cum_pct
FROM parca_top(parca_query('parca_agent:samples:count:cpu:nanoseconds:delta',
                           now() - interval '1 min', now()))
ORDER BY flat DESC LIMIT 15"
echo
# parca-server: it logs in as parca_server, which may only SET ROLE to
# push_local, a member of parca_push (docs/push.md, "Roles"), to store, and
# to ui_local, which may read profiles, for the web UI; without
# credentials, which it allows on loopback only.
PARCA_SERVER_LISTEN=${PARCA_SERVER_LISTEN:-127.0.0.1:7070}
psql -X -q -c "SET client_min_messages = warning; DO \$\$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'parca_server') THEN
        CREATE ROLE parca_server LOGIN NOINHERIT;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'push_local') THEN
        CREATE ROLE push_local NOLOGIN IN ROLE parca_push;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ui_local') THEN
        CREATE ROLE ui_local NOLOGIN;
    END IF;
END \$\$; GRANT push_local, ui_local TO parca_server;
GRANT USAGE ON SCHEMA parca TO ui_local;
GRANT SELECT ON parca.samples, parca.series, parca.locations, parca.functions, parca.mappings,
      parca.samples_hourly, parca.rollup_hours, parca.samples_daily, parca.rollup_days,
      parca.samples_weekly, parca.rollup_weeks, parca.profiles_hourly TO ui_local"
if [ -f "$PARCA_DIR/parca-server.pid" ] && kill -0 "$(cat "$PARCA_DIR/parca-server.pid")" 2>/dev/null; then
	kill "$(cat "$PARCA_DIR/parca-server.pid")"
	sleep 1
fi
"$repo/server/parca-server" --listen "$PARCA_SERVER_LISTEN" --allow-anonymous --anonymous-role push_local \
	--anonymous-reader-role ui_local \
	--dsn "host=127.0.0.1 port=$PARCA_PORT user=parca_server dbname=parca" >>"$PARCA_DIR/parca-server.log" 2>&1 &
echo $! > "$PARCA_DIR/parca-server.pid"
for _ in $(seq 1 50); do curl -s -o /dev/null "http://$PARCA_SERVER_LISTEN/ready" && break; sleep 0.2; done
curl -s -o /dev/null -w '' --data-binary @"$fixtures/parca/alloc_objects.pb.gz" \
	"http://$PARCA_SERVER_LISTEN/ingest?name=run-sh%7Bsource%3Dscripts-run%7D&format=pprof" || true
echo "parca-server accepts pushed profiles at http://$PARCA_SERVER_LISTEN ($(curl -s "http://$PARCA_SERVER_LISTEN/ready" || echo "not ready: see $PARCA_DIR/parca-server.log"))"
echo "Point a profiler at it as at a Pyroscope server (docs/push.md):"
echo "  Go:      pyroscope.Start(pyroscope.Config{ApplicationName: \"myapp\", ServerAddress: \"http://$PARCA_SERVER_LISTEN\"})"
echo "  Node.js: Pyroscope.init({appName: 'myapp', serverAddress: 'http://$PARCA_SERVER_LISTEN'}); Pyroscope.start()"
echo "  Java:    java -javaagent:pyroscope.jar -Dpyroscope.application.name=myapp -Dpyroscope.server.address=http://$PARCA_SERVER_LISTEN ..."
echo "  Python:  pyroscope.configure(application_name=\"myapp\", server_address=\"http://$PARCA_SERVER_LISTEN\")"
echo "  Alloy:   pyroscope.write \"parca\" { endpoint { url = \"http://$PARCA_SERVER_LISTEN\" } }"
echo "  OTLP:    an OpenTelemetry profiles exporter to http://$PARCA_SERVER_LISTEN/v1development/profiles"
echo "  curl:    curl --data-binary @cpu.pb.gz 'http://$PARCA_SERVER_LISTEN/ingest?name=myapp&format=pprof'"
echo "then: SELECT * FROM parca_profile_types(); -- e.g. memory:alloc_space:bytes:space:bytes{service_name=\"run-sh\"}"
echo "Its log: $PARCA_DIR/parca-server.log; stop it: kill \$(cat $PARCA_DIR/parca-server.pid)"
echo
echo "The cluster keeps running: psql -h 127.0.0.1 -p $PARCA_PORT -U postgres parca"
echo
echo "The web UI: http://$PARCA_SERVER_LISTEN/ (pick a profile type, e.g. fixture:cpu:nanoseconds:cpu:nanoseconds:delta, and \"All time\"; docs/web.md)"
