#!/usr/bin/env bash
# Symbolization in the database against eu-addr2line on the same addresses
# of the same file, in one run (docs/symbolization.md):
#  - glibc's separate debug file (libc6-dbg; compressed DWARF with
#    .debug_aranges, which eu-addr2line reads fully): addresses spread
#    through every function of libc.so.6;
#  - a Go program (the parca-symbolizer fixture of profile.pb.gz): Go
#    writes no .debug_aranges, where elfutils 0.188's eu-addr2line names
#    from the symbol table only, so llvm-symbolizer is timed beside it;
#    The database reads the program's .gopclntab first; the same program
#    is named again without its .gopclntab (its DWARF alone), and without
#    its DWARF (objcopy --strip-debug), timed beside Go's own reader of
#    the table, go tool addr2line.
# For each: parca_symbolize() over N unnamed locations (wall time, and the
# backend's peak resident memory, VmHWM, before and after), then
# eu-addr2line -f -i and llvm-symbolizer over the same addresses in one
# process each (wall time and peak resident memory, bench/rusage.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/lib.sh"
start_cluster 54407 "parca.symbolize_interval = 0" "parca.max_debuginfo_size = '64MB'"
stage=$(mktemp -d)
chmod 755 "$stage"
trap 'stop_cluster; rm -rf "$stage"' EXIT

libc=/lib/x86_64-linux-gnu/libc.so.6
libc_id=$(eu-readelf -n "$libc" | awk '/Build ID/ { print $3 }')
libc_debug=/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug
go_id=2d6912fd3dd64542f6f6294f4bf9cb6c265b3085
go_file=$SHARED_TESTDATA/pprof/parca-symbolizer/$go_id/debuginfo

# addresses FILE_WITH_SYMBOLS SEGMENTS_FILE PER_FUNCTION OUT: "offset vaddr"
# lines, PER_FUNCTION addresses spread through each function symbol
addresses() {
	python3 - "$1" "$2" "$3" > "$4" <<'EOF'
import subprocess, sys
symfile, segfile, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
segs = []
for line in subprocess.run(["eu-readelf", "-l", segfile], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if f and f[0] == "LOAD":
        segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
seen = set()
for line in subprocess.run(["eu-readelf", "-s", symfile], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) < 8 or f[3] != "FUNC" or f[6] == "UNDEF" or int(f[2]) == 0:
        continue
    start, size = int(f[1], 16), int(f[2])
    for k in range(per):
        v = start + size * k // per
        for off, vaddr, filesz in segs:
            if vaddr <= v < vaddr + filesz and v not in seen:
                seen.add(v)
                print(v - vaddr + off, v)
EOF
}

# bench NAME BUILD_ID DEBUG_FILE ADDRESSES [go]
bench() {
	local name=$1 id=$2 file=$3 addrs=$4 n go_ms=0
	n=$(wc -l < "$addrs")
	cp "$file" "$stage/debug"
	cut -d' ' -f1 "$addrs" > "$stage/offsets"
	chown postgres: "$stage"/*
	q "TRUNCATE parca.locations, parca.functions, parca.mappings, parca.debuginfo" >/dev/null
	q "SELECT parca_register_location(('{\"address\": \"0x1\", \"build_id\": \"$id\", \"file\": \"/bench\", \"lines\": []}')::location)" >/dev/null
	# locations as a writer registers them: id from mapping and address
	q "INSERT INTO parca.locations (id, mapping_id, address, function_ids, line_numbers)
	   SELECT -a, m.id, a, '{}', '{}' FROM parca.mappings m,
	          (SELECT pg_catalog.unnest(string_to_array(rtrim(pg_read_file('$stage/offsets'), E'\n'), E'\n')::bigint[]) AS a) o
	   ON CONFLICT DO NOTHING" >/dev/null
	q "INSERT INTO parca.debuginfo (build_id, elf, source) VALUES ('$id', pg_read_binary_file('$stage/debug'), 'upload')" >/dev/null
	local out
	out=$(psql -X -qAt -v ON_ERROR_STOP=1 <<SQL
SELECT pg_backend_pid() AS pid \gset
\setenv BACKEND_PID :pid
\! grep VmHWM /proc/\$BACKEND_PID/status | awk '{ print \$2 }'
\timing on
SELECT parca_symbolize('$id');
\timing off
\! grep VmHWM /proc/\$BACKEND_PID/status | awk '{ print \$2 }'
SQL
)
	local hwm0 named ms hwm1
	hwm0=$(echo "$out" | sed -n 1p)
	named=$(echo "$out" | sed -n 2p)
	ms=$(echo "$out" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
	hwm1=$(echo "$out" | tail -1)
	cut -d' ' -f2 "$addrs" | awk '{ printf "0x%x\n", $1 }' > "$stage/vaddrs"
	local t0 t1 eu_ms llvm_ms
	t0=$(date +%s%N)
	python3 "$here/rusage.py" "$stage/eu.rusage" sh -c "eu-addr2line -f -i -e '$file' < '$stage/vaddrs' > '$stage/eu.out'"
	t1=$(date +%s%N)
	eu_ms=$(( (t1 - t0) / 1000000 ))
	t0=$(date +%s%N)
	python3 "$here/rusage.py" "$stage/llvm.rusage" sh -c "llvm-symbolizer --obj='$file' -f -i --no-demangle < '$stage/vaddrs' > '$stage/llvm.out'"
	t1=$(date +%s%N)
	llvm_ms=$(( (t1 - t0) / 1000000 ))
	rm -f "$stage/go.rusage"
	if [ "${5:-}" = go ]; then
		t0=$(date +%s%N)
		python3 "$here/rusage.py" "$stage/go.rusage" sh -c "go tool addr2line '$file' < '$stage/vaddrs' > '$stage/go.out'"
		t1=$(date +%s%N)
		go_ms=$(( (t1 - t0) / 1000000 ))
	fi
	awk -v goms="$go_ms" -v gorss="$(cut -d' ' -f3 "$stage/go.rusage" 2>/dev/null || echo 0)" \
		-v name="$name" -v n="$n" -v named="$named" -v ms="$ms" -v h0="$hwm0" -v h1="$hwm1" \
		-v eums="$eu_ms" -v eurss="$(cut -d' ' -f3 "$stage/eu.rusage")" \
		-v llvmms="$llvm_ms" -v llvmrss="$(cut -d' ' -f3 "$stage/llvm.rusage")" 'BEGIN {
		printf "%s: %d locations (%d named)\n", name, n, named
		printf "  parca_symbolize   %8.0f ms  %9.0f locations/s  backend peak RSS %d MB -> %d MB\n", ms, n / (ms / 1000), h0 / 1024, h1 / 1024
		printf "  eu-addr2line      %8.0f ms  %9.0f locations/s  peak RSS %d MB\n", eums, n / (eums / 1000), eurss / 1024
		printf "  llvm-symbolizer   %8.0f ms  %9.0f locations/s  peak RSS %d MB\n", llvmms, n / (llvmms / 1000), llvmrss / 1024
		if (goms > 0)
			printf "  go tool addr2line %8.0f ms  %9.0f locations/s  peak RSS %d MB\n", goms, n / (goms / 1000), gorss / 1024
	}'
}

addresses "$libc" "$libc" 8 "$stage/libc.addrs"
bench "glibc ($libc_id)" "$libc_id" "$libc_debug" "$stage/libc.addrs"
addresses "$go_file" "$go_file" 16 "$stage/go.addrs"
bench "Go program ($go_id)" "$go_id" "$go_file" "$stage/go.addrs"
objcopy --remove-section=.gopclntab "$go_file" "$stage/go-dwarf"
bench "Go program without .gopclntab ($go_id)" "$go_id" "$stage/go-dwarf" "$stage/go.addrs"
objcopy --strip-debug "$go_file" "$stage/go-nodwarf"
bench "Go program without DWARF ($go_id)" "$go_id" "$stage/go-nodwarf" "$stage/go.addrs" go
