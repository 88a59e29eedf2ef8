#!/usr/bin/env bash
# Symbolization in the database (docs/symbolization.md):
#  - each parca-symbolizer fixture profile is ingested without names, its
#    debug information uploaded (parca_debuginfo_upload); every frame of
#    every location of its mapping is then compared with eu-addr2line on
#    the same file and address (compare.py; llvm-symbolizer where elfutils
#    finds no DWARF unit), for samples stored before and after the upload;
#  - parca_symbolize() by hand names locations again; the background worker
#    names locations ingested after their debug information arrived;
#  - every function's flat and cum as pprof names the fixture profiles
#    from the same files (pprof_functions.py): go tool pprof, with the
#    addresses in inlined code as known differences, and the standalone
#    pprof, exactly;
#  - a Go program built here, without DWARF (.gopclntab), with its
#    compressed DWARF, and without its code and read-only data: every frame
#    as the program's own CPU profile names it;
#  - a local debuginfod server (elfutils') over loopback: fetched, named
#    and compared; missing build ids noted and not asked for again before
#    the retry time; file:// refused; a response over the limit refused;
#    the cache bounded;
#  - the role, the size limit, build ids and files that are not ELF;
#  - hostile ELF files (truncated, extreme headers, decompression bombs,
#    random bytes), a C++ program's and a Go program's (its .gopclntab),
#    each give a clean error or a result, never a crash;
#  - the server going down twice while the worker reads a file (a SIGKILL
#    of the worker, as a crash of libdw would be): the worker reads that
#    file no more, and goes on with the others.
# About two minutes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib.sh"

require_fixtures
start_cluster "${PARCA_SYMBOLIZE_TEST_PORT:-54471}" "parca.symbolize_interval = 1" \
	"parca.max_debuginfo_size = '8MB'"
fixtures=$SHARED_TESTDATA/pprof/parca-symbolizer
work=$(mktemp -d /tmp/parca-symbolize-test.XXXXXX)
trap 'stop_cluster; rm -rf "$work"' EXIT
# the server reads the files itself
copies=$PGDATA_DIR/fixtures
cp -r "$fixtures" "$copies"
chown -R postgres: "$copies"

# frames BUILD_ID > FILE: what compare.py reads
frames() {
	psql -X -qAt -F $'\t' -c "
		SELECT l.address, coalesce(u.pos, 0), coalesce(f.system_name, ''),
		       coalesce(f.filename, ''), coalesce(u.line, 0)
		FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
		LEFT JOIN LATERAL unnest(l.function_ids, l.line_numbers) WITH ORDINALITY AS u(fid, line, pos) ON true
		LEFT JOIN parca.functions f ON f.id = u.fid
		WHERE m.build_id = '$1' ORDER BY 1, 2"
}
unnamed() {
	q "SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
	   WHERE m.build_id = '$1' AND cardinality(l.function_ids) = 0"
}
# compare NAME PPROF BUILD_ID
compare() {
	frames "$3" > "$work/frames.tsv"
	local out
	out=$(python3 "$here/compare.py" "$2" "$fixtures/$3/debuginfo" "$3" "$work/frames.tsv")
	local rc=$?
	echo "# $1: $(echo "$out" | tail -1)"
	[ $rc = 0 ] || echo "$out" | head -20
	check "$1: every frame as eu-addr2line names it" [ $rc = 0 ]
}
top_of() {
	q "SELECT string_agg(name, ';' ORDER BY flat DESC, name) FROM (
	     SELECT function AS name, flat FROM parca_top(parca_query('process_cpu:samples:count:cpu:nanoseconds:delta{when=\"$1\"}',
	                                                  '2000-01-01', now())) ORDER BY flat DESC, name LIMIT 5) t"
}

declare -A profile_of=(
	[77364271716762793947664b3479416b4676642d2f417a333159574d503255743036584e4a3867414c2f4d77616c62673256647a494f4437674265727a472f37625364676957463368655f68784f7678745478]=inlining-disabled-cpu.stripped.pprof
	[2d5745782d486738416336492d624458373872722f43476c446c45724d31434c692d6745383869752d2f5f6765757162714a666856504e464c73585830762f445a554f4e796c324b655554684d463241784b43]=normal-cpu.stripped.pprof
	[595150334c6a706f4957766e4d6c7476614457742f454556526d5a2d665f79675433316e7169685f4a2f5a515a3830714d666c5a756f65714a79615154502f7057517431716e516f4b436b50696e756a474d6f]=stripped-cpu.stripped.pprof
	[536f474d6962346e6d6839516b665657786e436e2f43476c446c45724d31434c692d6745383869752d2f5f6765757162714a666856504e464c73585830762f545065446b774c707530396845444b4b34534767]=without-dwarf-cpu.stripped.pprof
)

# --- each fixture: stored unnamed, uploaded, compared ----------------------
n=0
declare -A when_of
for b in "${!profile_of[@]}"; do
	p=${profile_of[$b]}
	n=$((n + 1))
	when_of[$b]=before$n
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$copies/$p'), 'process_cpu', '{\"when\": \"before$n\"}')" >/dev/null
	before=$(unnamed "$b")
	check "$p: stored without names ($before locations)" [ "$before" -gt 0 ]
	named=$(q "SELECT parca_debuginfo_upload('$b', pg_read_binary_file('$copies/$b/debuginfo'))")
	after=$(unnamed "$b")
	check_eq "$p: the upload reports the locations it named ($named)" "$((before - after))" "$named"
	compare "$p" "$fixtures/$p" "$b"
	# the same profile stored again, later: the same rows name it
	q "SELECT parca_ingest_pprof(pg_read_binary_file('$copies/$p'), 'process_cpu', '{\"when\": \"after$n\"}')" >/dev/null
	check_eq "$p: samples stored before and after are named alike" "$(top_of "before$n")" "$(top_of "after$n")"
	check_eq "$p: storing it again leaves nothing new unnamed" "$after" "$(unnamed "$b")"
done
dwarf_b=77364271716762793947664b3479416b4676642d2f417a333159574d503255743036584e4a3867414c2f4d77616c62673256647a494f4437674265727a472f37625364676957463368655f68784f7678745478
check_eq "inlining-disabled: the hottest function is named" "math/big.addVV" \
	"$(q "SELECT function FROM parca_top(parca_query('process_cpu:samples:count:cpu:nanoseconds:delta{when=~\"before.*\"}', '2000-01-01', now())) ORDER BY flat DESC LIMIT 1")"
check "inlined frames are stored (a location with more than one line)" \
	[ "$(q "SELECT count(*) FROM parca.locations WHERE cardinality(function_ids) > 1")" -gt 0 ]

# --- every function's flat and cum as pprof names the same profile --------
# pprof_functions.py: each profile as the database wrote it back
# (parca_pprof) against go tool pprof -symbolize=force of the profile as
# ingested, with the same ELF file; go tool pprof names no inlined calls,
# so the database's inlined frames are folded into the function that holds
# them and the addresses in inlined code are listed as known differences
# (docs/symbolization.md).  And against the standalone pprof (Debian's
# golang-github-google-pprof-dev, built here), which names inlined calls
# from DWARF through llvm-symbolizer: every function exactly, inlined ones
# too, for the files with DWARF (it does not read .gopclntab).
google_pprof=$work/google-pprof
(cd "$work" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= go build -o "$google_pprof" github.com/google/pprof) ||
	echo "# the standalone pprof did not build (scripts/deps.sh installs golang-github-google-pprof-dev)"
check "the standalone pprof is built" [ -x "$google_pprof" ]
# pprof_functions NAME PPROF BUILD_ID WHEN
pprof_functions() {
	local google=() out rc
	psql -X -qAt -c "SELECT encode(parca_pprof(parca_query('process_cpu:samples:count:cpu:nanoseconds:delta{when=\"$4\"}',
	                 '2000-01-01', now())), 'base64')" | base64 -d >"$work/ours.pb.gz"
	readelf -S "$fixtures/$3/debuginfo" | grep -q 'debug_info' && google=(--google "$google_pprof")
	out=$(python3 "$here/pprof_functions.py" "${google[@]}" "$2" "$fixtures/$3/debuginfo" "$3" "$work/ours.pb.gz")
	rc=$?
	echo "$out" | grep '^# known' | cut -c1-400
	echo "# $1: $(echo "$out" | tail -1)"
	[ $rc = 0 ] || echo "$out" | grep -v '^# known' | head -20
	check "$1: every function's flat and cum as pprof names the profile" [ $rc = 0 ]
}
for b in "${!profile_of[@]}"; do
	pprof_functions "${profile_of[$b]}" "$fixtures/${profile_of[$b]}" "$b" "${when_of[$b]}"
done

# --- by hand: parca_symbolize ----------------------------------------------
all=$(q "SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
         WHERE m.build_id = '$dwarf_b' AND cardinality(l.function_ids) > 0")
left=$(unnamed "$dwarf_b")
# in one transaction, so that the worker does not name them first
got=$(psql -X -qAt -v ON_ERROR_STOP=1 -c "BEGIN" -c "UPDATE parca.locations l SET function_ids = '{}', line_numbers = '{}'
	FROM parca.mappings m WHERE m.id = l.mapping_id AND m.build_id = '$dwarf_b'" \
	-c "SELECT parca_symbolize('$dwarf_b')" -c "COMMIT" | tail -1)
check_eq "parca_symbolize names them again" "$all" "$got"
check_eq "parca_symbolize leaves unnamed what it cannot name" "$left" "$(unnamed "$dwarf_b")"
compare "parca_symbolize" "$fixtures/inlining-disabled-cpu.stripped.pprof" "$dwarf_b"
check_eq "parca_symbolize of a build id without debug information" 0 "$(q "SELECT parca_symbolize('abcdef')")"

# --- the worker: debug information first, the profile afterwards ----------
b2=2d6912fd3dd64542f6f6294f4bf9cb6c265b3085
check_eq "an upload before any location names nothing" 0 \
	"$(q "SELECT parca_debuginfo_upload('$b2', pg_read_binary_file('$copies/$b2/debuginfo'))")"
q "SELECT parca_ingest_pprof(pg_read_binary_file('$copies/profile.pb.gz'), 'process_cpu', '{\"when\": \"later\"}')" >/dev/null
# parca.symbolize_interval = 1: a loaded machine may take some seconds
for i in $(seq 1 60); do
	[ "$(unnamed "$b2")" = 0 ] && break
	sleep 1
done
check_eq "the worker names locations stored after their debug information" 0 "$(unnamed "$b2")"
[ "$(unnamed "$b2")" = 0 ] || grep 'symbolizer' "$PGDATA_DIR/log" | tail -5
compare "profile.pb.gz (by the worker)" "$fixtures/profile.pb.gz" "$b2"
pprof_functions "profile.pb.gz (by the worker)" "$fixtures/profile.pb.gz" "$b2" later

# --- a C++ program with .debug_aranges, through a local debuginfod ----------
# debuginfod (elfutils) serves the files under a folder by GNU build id; the
# Go fixtures have none, the C++ program has one.  Beside it, a plain HTTP
# server with a file larger than parca.max_debuginfo_size, and a file://
# URL, which the fetcher must not follow.
cpp=126cf12e76810726c76d87ab8a6a57e9a1d4c815
for a in 0x1106 0x1110 0x1125 0x1130 0x1144 0x114a 0x1150 0x1156 0x115c 0x1162 0x1168 0x1170 0x1030; do
	q "SELECT parca_register_location('{\"address\": \"$a\", \"build_id\": \"$cpp\", \"file\": \"/basic-cpp\", \"lines\": []}')" >/dev/null
done
for b in deadbeef aaaa1111 bbbb2222; do
	q "SELECT parca_register_location('{\"address\": \"0x1000\", \"build_id\": \"$b\", \"file\": \"/x\", \"lines\": []}')" >/dev/null
done
dport=$((18100 + ${PARCA_TEST_PORT_OFFSET:-0}))
hport=$((18101 + ${PARCA_TEST_PORT_OFFSET:-0}))
mkdir -p "$work/served" "$work/http/buildid/aaaa1111" "$work/file/buildid/bbbb2222" "$work/cpp/$cpp"
cp "$fixtures/basic-cpp-no-fp-with-debuginfo" "$work/served/"
cp "$fixtures/basic-cpp-no-fp-with-debuginfo" "$work/cpp/$cpp/debuginfo"
cp "$fixtures/basic-cpp-no-fp-with-debuginfo" "$work/file/buildid/bbbb2222/debuginfo"
head -c $((9 * 1024 * 1024)) /dev/zero > "$work/http/buildid/aaaa1111/debuginfo"
debuginfod -p "$dport" -d "$work/debuginfod.sqlite" -F "$work/served" -t 0 -g 0 >"$work/debuginfod.log" 2>&1 &
debuginfod_pid=$!
python3 -m http.server "$hport" --bind 127.0.0.1 --directory "$work/http" >"$work/http.log" 2>&1 &
http_pid=$!
trap 'kill $debuginfod_pid $http_pid 2>/dev/null; stop_cluster; rm -rf "$work"' EXIT
# debuginfod scans its folder once started
for i in $(seq 1 100); do
	curl -sf -o /dev/null "http://127.0.0.1:$dport/buildid/$cpp/debuginfo" && break
	sleep 0.2
done
q "ALTER SYSTEM SET parca.debuginfod_urls = 'file://$work/file http://127.0.0.1:$dport/ http://127.0.0.1:$hport'" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
for i in $(seq 1 60); do
	[ "$(unnamed "$cpp")" = 0 ] && [ "$(q "SELECT count(*) FROM parca.debuginfo_missing")" = 3 ] && break
	sleep 1
done
check_eq "the worker fetched the C++ program's debug information from debuginfod" "debuginfod|26544" \
	"$(q "SELECT source, octet_length(elf) FROM parca.debuginfo WHERE build_id = '$cpp'")"
fixtures_saved=$fixtures
fixtures=$work/cpp
compare "basic-cpp, through debuginfod" "-" "$cpp"
fixtures=$fixtures_saved
grep 'symbolizer' "$PGDATA_DIR/log" | grep -v 'named [0-9]* locations' | tail -5 | sed 's/^/# /'
missing() { q "SELECT error FROM parca.debuginfo_missing WHERE build_id = '$1'"; }
check_eq "a build id no server has is noted missing" "not found" "$(missing deadbeef)"
check_eq "a file:// URL is not followed" "not found" "$(missing bbbb2222)"
check "a response larger than parca.max_debuginfo_size is refused" \
	grep -q "larger than parca.max_debuginfo_size" <<<"$(missing aaaa1111)"
checked=$(q "SELECT checked_at FROM parca.debuginfo_missing WHERE build_id = 'deadbeef'")
asked=$(grep -c "buildid/deadbeef/debuginfo" "$work/debuginfod.log")
sleep 3
check_eq "a missing build id is not asked for again before parca.debuginfod_retry" \
	"$checked $asked" "$(q "SELECT checked_at FROM parca.debuginfo_missing WHERE build_id = 'deadbeef'") $(grep -c "buildid/deadbeef/debuginfo" "$work/debuginfod.log")"
q "ALTER SYSTEM SET parca.debuginfod_retry = '1s'" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
for i in $(seq 1 30); do
	[ "$(grep -c "buildid/deadbeef/debuginfo" "$work/debuginfod.log")" -gt "$asked" ] && break
	sleep 1
done
check "after parca.debuginfod_retry it is asked for again" \
	[ "$(grep -c "buildid/deadbeef/debuginfo" "$work/debuginfod.log")" -gt "$asked" ]
q "ALTER SYSTEM SET parca.debuginfod_cache_size = 0" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null
rm "$work/http/buildid/aaaa1111/debuginfo"
# a Go program: no GNU build id to disagree with aaaa1111
cp "$fixtures/2d6912fd3dd64542f6f6294f4bf9cb6c265b3085/debuginfo" "$work/http/buildid/aaaa1111/debuginfo"
for i in $(seq 1 30); do
	[ -z "$(missing aaaa1111)" ] && break
	sleep 1
done
check_eq "beyond parca.debuginfod_cache_size fetched files are deleted, uploads kept" "upload" \
	"$(q "SELECT string_agg(DISTINCT source, ',') FROM parca.debuginfo")"
q "ALTER SYSTEM RESET ALL" >/dev/null
q "SELECT pg_reload_conf()" >/dev/null

# --- a C program with inlined calls, built here: eu-addr2line knows them ---
gcc -O2 -g -fPIE -pie "$here/inlined.c" -o "$work/inlined"
inl=$(eu-readelf -n "$work/inlined" | awk '/Build ID/ { print $3 }')
main=$(eu-readelf -s "$work/inlined" | awk '$8 == "main" { print $2, $3 }')
for a in $(python3 -c "s, n = '$main'.split(); s = int(s, 16); print(' '.join(hex(s + i) for i in range(0, int(n))))"); do
	q "SELECT parca_register_location('{\"address\": \"$a\", \"build_id\": \"$inl\", \"file\": \"/inlined\", \"lines\": []}')" >/dev/null
done
mkdir -p "$work/inl/$inl" && cp "$work/inlined" "$work/inl/$inl/debuginfo" && chown -R postgres: "$work/inl"
chmod 755 "$work"
q "SELECT parca_debuginfo_upload('$inl', pg_read_binary_file('$work/inl/$inl/debuginfo'))" >/dev/null
fixtures_saved=$fixtures
fixtures=$work/inl
compare "a C program with inlined calls" "-" "$inl"
fixtures=$fixtures_saved
check "inlined calls in C are stored as frames (leaf;mid;main)" \
	[ "$(q "SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
	        WHERE m.build_id = '$inl' AND cardinality(l.function_ids) = 3")" -gt 0 ]

# --- a Go program built here: .gopclntab, and compressed DWARF -------------
# Its own CPU profile (runtime/pprof: the runtime names its frames from its
# .gopclntab) is the oracle: each location's frames, inlined ones too, as
# function, file and line.  Built twice: without DWARF and symbols
# (-ldflags='-s -w': the database reads .gopclntab) and as Go builds by
# default, with zlib-compressed DWARF (the database reads .gopclntab first,
# as the agent does, so that both name a function alike); each runs for
# its own profile (their code differs by the build id the linker embeds).
# The default build is uploaded once more without its .gopclntab: its
# DWARF, which libdw inflates, must name it alike.  And the build without
# DWARF once more with the table's section renamed, as programs linked by
# the system's linker with a recent Go have no .gopclntab section:
# the table is found in the read-only data by its header.  And the
# default build once more as Parca's without-dwarf fixture was made: code
# and read-only data removed, the table, the data and DWARF kept; the
# table names each function and line, but its inline trees were in the
# read-only data: DWARF names the inlined calls.
gowork=$work/go
mkdir -p "$gowork"
(cd "$TEST_ROOT/agent/gohot" && GOFLAGS=-mod=mod go build -ldflags='-s -w' -o "$gowork/stripped" . &&
	GOFLAGS=-mod=mod go build -o "$gowork/full" .) || echo "# the Go program did not build"
chown -R postgres: "$gowork"
chmod 755 "$work"
objcopy --remove-section=.gopclntab "$gowork/full" "$gowork/dwarf"
objcopy --rename-section=.gopclntab=.rodata.pclntab "$gowork/stripped" "$gowork/renamed"
objcopy --remove-section=.text --remove-section=.rodata "$gowork/full" "$gowork/extracted"
chown postgres: "$gowork"/*
for kind in stripped full dwarf renamed extracted; do
	go_b=$(printf 'go-%s-%s' "$kind" "$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')" | od -An -tx1 | tr -d ' \n')
	# (the DWARF-only and renamed files run as the builds they come from)
	run=$kind
	[ "$kind" = dwarf ] || [ "$kind" = extracted ] && run=full
	[ "$kind" = renamed ] && run=stripped
	"$gowork/$run" 2 "$gowork/$kind.prof"
	for a in $(go tool pprof -raw "$gowork/$kind.prof" 2>/dev/null |
		awk '/^Locations/ { s = 1; next } /^Mappings/ { s = 0 } s && $3 == "M=1" { print $2 }'); do
		# not a position-independent program: file offset = address - 0x400000
		q "SELECT parca_register_location('{\"address\": \"$(printf '%#x' $((a - 0x400000)))\", \"build_id\": \"$go_b\", \"file\": \"/gohot\", \"lines\": []}')" >/dev/null
	done
	check "Go ($kind): stored without names" [ "$(unnamed "$go_b")" -gt 0 ]
	q "SELECT parca_debuginfo_upload('$go_b', pg_read_binary_file('$gowork/$kind'))" >/dev/null
	frames "$go_b" > "$gowork/frames.tsv"
	out=$(python3 "$here/pprof_frames.py" --all "$gowork/$kind.prof" "$gowork/frames.tsv")
	rc=$?
	echo "# Go ($kind): $(echo "$out" | tail -1)"
	[ $rc = 0 ] || echo "$out" | head -20
	check "Go ($kind): every location's frames, inlined ones too, as the program's own profile names them" [ $rc = 0 ]
	check "Go ($kind): main.mix inlined into main.spin, with file and line" \
		[ "$(q "SELECT count(*) FROM parca.locations l JOIN parca.mappings m ON m.id = l.mapping_id
		        CROSS JOIN LATERAL (SELECT string_agg(f.name || ' ' || f.filename || ':' || u.line, ';' ORDER BY u.pos) AS s
		          FROM unnest(l.function_ids, l.line_numbers) WITH ORDINALITY AS u(fid, line, pos)
		          JOIN parca.functions f ON f.id = u.fid) c
		        WHERE m.build_id = '$go_b' AND c.s ~ '^main\.mix [^;]*/gohot/main\.go:2[0-9];main\.spin [^;]*/gohot/main\.go:[0-9]+$'")" -gt 0 ]
done

# --- who may upload, and what --------------------------------------------
q "SELECT parca_debuginfo_upload('$cpp', pg_read_binary_file('$copies/basic-cpp-no-fp-with-debuginfo'))" >/dev/null
q "CREATE ROLE symbolize_user LOGIN" >/dev/null
err() { psql -X -qAt -U "${2:-postgres}" -c "\\set VERBOSITY verbose" -c "$1" 2>&1 | grep -o 'ERROR:  [0-9A-Z]*' | head -1; }
cpp_file="pg_read_binary_file('$copies/basic-cpp-no-fp-with-debuginfo')"
q "GRANT EXECUTE ON FUNCTION pg_read_binary_file(text) TO symbolize_user; GRANT pg_read_server_files TO symbolize_user" >/dev/null
check_eq "PUBLIC may not upload" "ERROR:  42501" "$(err "SELECT parca_debuginfo_upload('$cpp', $cpp_file)" symbolize_user)"
check_eq "PUBLIC may not symbolize" "ERROR:  42501" "$(err "SELECT parca_symbolize('$cpp')" symbolize_user)"
q "GRANT parca_debuginfo TO symbolize_user" >/dev/null
check_eq "a member of parca_debuginfo may upload" "0" \
	"$(psql -X -qAt -U symbolize_user -c "SELECT parca_debuginfo_upload('$cpp', $cpp_file)")"
check_eq "a file larger than parca.max_debuginfo_size" "ERROR:  54000" \
	"$(err "SET parca.max_debuginfo_size = '16kB'; SELECT parca_debuginfo_upload('$cpp', $cpp_file)")"
check_eq "only a superuser sets parca.max_debuginfo_size" "ERROR:  42501" \
	"$(err "SET parca.max_debuginfo_size = '1GB'" symbolize_user)"
check_eq "a build id that is not hexadecimal" "ERROR:  22023" "$(err "SELECT parca_debuginfo_upload('xyz', $cpp_file)")"
check_eq "a build id of 1025 digits" "ERROR:  22023" "$(err "SELECT parca_debuginfo_upload(repeat('a', 1025), $cpp_file)")"
check_eq "another file's build id" "ERROR:  22023" "$(err "SELECT parca_debuginfo_upload('00$cpp', $cpp_file)")"
check_eq "bytes that are not ELF" "ERROR:  22P03" "$(err "SELECT parca_debuginfo_upload('abcd', '\\x7f454c46'::bytea)")"
check_eq "NULL arguments" "t|" "$(q "SELECT parca_debuginfo_upload(NULL, NULL) IS NULL, parca_symbolize(NULL)")" 

# --- hostile files: a clean error or a result, never a crash ---------------
# hostile_round ELF BUILD_ID SEED: the variants of ELF uploaded for BUILD_ID,
# whose locations (made unnamed) each names, every upload rolled back
hostile_round() {
	local hostile=$PGDATA_DIR/hostile
	rm -rf "$hostile"
	nfiles=$(python3 "$here/hostile.py" "$1" "$hostile" "$3" 600)
	chown -R postgres: "$hostile"
	q "UPDATE parca.locations l SET function_ids = '{}', line_numbers = '{}' FROM parca.mappings m
	   WHERE m.id = l.mapping_id AND m.build_id = '$2'" >/dev/null
	out=$(psql -X -qAt -v ON_ERROR_STOP=1 <<SQL 2>&1
CREATE TEMP TABLE outcome (file text, code text, message text);
DO \$\$
DECLARE f text;
BEGIN
    FOR f IN SELECT pg_ls_dir('$hostile') ORDER BY 1 LOOP
        BEGIN
            PERFORM parca_debuginfo_upload('$2', pg_read_binary_file('$hostile/' || f));
            RAISE EXCEPTION 'stored' USING ERRCODE = 'PX001';
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO outcome VALUES (f, SQLSTATE, SQLERRM);
        END;
    END LOOP;
END
\$\$;
SELECT code, count(*), min(message) FROM outcome GROUP BY 1 ORDER BY 1;
SQL
)
	echo "$out" | sed 's/^/# /'
}
hostile_round "$fixtures/basic-cpp-no-fp-with-debuginfo" "$cpp" 1
check_eq "every hostile file gave an outcome ($nfiles files)" "$nfiles" \
	"$(echo "$out" | awk -F'|' '{ s += $2 } END { print s }')"
check "hostile files: only clean errors (22P03 not ELF, 22023 wrong build id, 54000 too large) or a result" \
	[ -z "$(echo "$out" | awk -F'|' '$1 !~ /^(PX001|22P03|22023|54000)$/')" ]
check "a decompression bomb is refused" grep -q '^54000|' <<<"$out"
# a Go program without DWARF: its .gopclntab read from hostile bytes
go_b=$(q "SELECT build_id FROM parca.mappings WHERE build_id LIKE '$(printf go-stripped | od -An -tx1 | tr -d ' \n')%'")
hostile_round "$gowork/stripped" "$go_b" 2
check_eq "every hostile Go program gave an outcome ($nfiles files)" "$nfiles" \
	"$(echo "$out" | awk -F'|' '{ s += $2 } END { print s }')"
check "hostile Go programs: only clean errors or a result" \
	[ -z "$(echo "$out" | awk -F'|' '$1 !~ /^(PX001|22P03|54000)$/')" ]
check "the server is up, no backend crashed" \
	bash -c "[ \"\$(psql -X -qAt -c 'SELECT 1')\" = 1 ] && ! grep -q 'terminated by signal' '$PGDATA_DIR/log'"
grep -B3 'terminated by signal' "$PGDATA_DIR/log" | sed 's/^/# /' | cut -c1-300

# --- the server going down while the worker reads a file -------------------
# A file that crashes libelf or libdw takes the whole server down, and the
# worker, started again, would read it at once: a crash loop.  The worker
# notes the build id it reads (src/symbolize/guard.c); the second time in a
# row that the server went down meanwhile, it reads that file no more.
# The crash here is a SIGKILL of the worker while it waits for the build
# id's row, which a session holds as an upload does: the postmaster restarts
# every process as for a crash.  parca.symbolize_interval = 0 keeps the
# worker from starting a pass while the test sets the next round up.
db_oid=$(q "SELECT oid FROM pg_database WHERE datname = current_database()")
guard=$PGDATA_DIR/data/pg_parca/symbolizer.$db_oid
set_interval() {
	q "ALTER SYSTEM SET parca.symbolize_interval = $1" >/dev/null
	q "SELECT pg_reload_conf()" >/dev/null
}
unname() {
	q "UPDATE parca.locations l SET function_ids = '{}', line_numbers = '{}' FROM parca.mappings m
	   WHERE m.id = l.mapping_id AND m.build_id = '$1'" >/dev/null
}
# hold_row: a session holds the C++ program's row until the server goes down
hold_row() {
	psql -X -qAt -c "BEGIN" -c "SELECT 1 FROM parca.debuginfo WHERE build_id = '$cpp' FOR UPDATE" \
		-c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
	for i in $(seq 1 100); do
		[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")" = 1 ] && return
		sleep 0.1
	done
}
# blocked_worker: the worker's pid once it waits for that row, reading $cpp
blocked_worker() {
	local pid=
	for i in $(seq 1 120); do
		pid=$(q "SELECT pid FROM pg_stat_activity
		         WHERE query = 'parca: naming locations' AND wait_event_type = 'Lock'")
		[ -n "$pid" ] && break
		sleep 0.5
	done
	echo "$pid"
}
# crash PID: the worker killed; until the server takes connections again
crash() {
	kill -9 "$1"
	sleep 1
	for i in $(seq 1 120); do
		[ "$(psql -X -qAt -c 'SELECT 1' 2>/dev/null)" = 1 ] && return
		sleep 0.5
	done
}
set_interval 0
unname "$cpp"
all_cpp=$(unnamed "$cpp")
for round in 0 1; do
	hold_row
	set_interval 1
	pid=$(blocked_worker)
	check "round $round: the worker reads the build id, noted in $(basename "$guard")" \
		test -n "$pid" -a "$(cat "$guard" 2>/dev/null)" = "$cpp stored $round"
	set_interval 0
	crash "$pid"
done
check "after the first time, the worker logs it and reads the file once more" \
	grep -q "parca symbolizer: the server went down while build id $cpp was read; it is read once more" \
	"$PGDATA_DIR/log"
set_interval 1
for i in $(seq 1 60); do
	grep -q "parca symbolizer: build id $cpp: the server went down twice" "$PGDATA_DIR/log" && break
	sleep 1
done
check "after the second time, the worker says it reads the file no more" \
	grep -q "WARNING:  parca symbolizer: build id $cpp: the server went down twice while the symbolizer read it; not read again" \
	"$PGDATA_DIR/log"
check_eq "the file is marked" "infinity" \
	"$(q "SELECT symbolized_at FROM parca.debuginfo WHERE build_id = '$cpp'")"
check "and the note is gone" test ! -e "$guard"
# the worker goes on with the others, and leaves that one alone
unname "$b2"
for i in $(seq 1 60); do
	[ "$(unnamed "$b2")" = 0 ] && break
	sleep 1
done
check_eq "the worker names the others' locations still" 0 "$(unnamed "$b2")"
check_eq "and not those of the file marked" "$all_cpp" "$(unnamed "$cpp")"
check_eq "the server went down twice, no more" 2 \
	"$(grep -c 'terminating any other active server processes' "$PGDATA_DIR/log")"
q "SELECT parca_debuginfo_upload('$cpp', pg_read_binary_file('$copies/basic-cpp-no-fp-with-debuginfo'))" >/dev/null
check "stored again, the file is read again" \
	test "$(q "SELECT symbolized_at <> 'infinity' FROM parca.debuginfo WHERE build_id = '$cpp'")" = t \
	-a "$(unnamed "$cpp")" -lt "$all_cpp"

finish
