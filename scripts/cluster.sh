# The project's own PostgreSQL cluster (sourced by scripts/run.sh).
#
# Lives in .parca/pgdata under the project folder, run by the postgres
# user, listening on 127.0.0.1:$PARCA_PORT and a socket in .parca/, with
# the library preloaded and the extension created in database "parca".

PARCA_PORT=${PARCA_PORT:-54329}
PG_BIN=$(pg_config --bindir)

cluster_dir() {
	local dir="$1/.parca"
	mkdir -p "$dir"
	# postgres must be able to reach the folder; a home directory often
	# forbids it, and then the cluster lives in /var/lib/parca instead.
	if ! runuser -u postgres -- test -x "$dir" 2>/dev/null || ! runuser -u postgres -- test -x "$1"; then
		echo "note: the postgres user cannot enter $1; the cluster lives in /var/lib/parca" >&2
		dir=/var/lib/parca
		mkdir -p "$dir"
	fi
	chown postgres: "$dir"
	echo "$dir"
}

# cluster_start PROJECT_DIR: sets PARCA_DIR and the PG* variables for psql.
cluster_start() {
	PARCA_DIR=$(cluster_dir "$1")
	local data="$PARCA_DIR/pgdata"
	if [ ! -f "$data/PG_VERSION" ]; then
		runuser -u postgres -- "$PG_BIN/initdb" -D "$data" -A trust -U postgres >/dev/null
		cat >> "$data/postgresql.conf" <<CONF
port = $PARCA_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PARCA_DIR'
shared_preload_libraries = 'parca'
CONF
	fi
	if ! runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
		runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$data" -l "$PARCA_DIR/postgresql.log" -w start >/dev/null
	fi
	export PGHOST=127.0.0.1 PGPORT=$PARCA_PORT PGUSER=postgres
	psql -X -qAt -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'parca'" | grep -q 1 ||
		psql -X -q -d postgres -c "CREATE DATABASE parca"
	export PGDATABASE=parca
	psql -X -q -c "CREATE EXTENSION IF NOT EXISTS parca" 2>&1 | grep -v "already exists" || true
	psql -X -q -c "ALTER EXTENSION parca UPDATE" 2>/dev/null || true
}
