#!/usr/bin/env bash
# Installs what building, running and testing parca needs (Debian 12, root).
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
	echo "scripts/deps.sh: run as root (it installs Debian packages)" >&2
	exit 1
fi
packages=(
	build-essential pkg-config
	postgresql-15 postgresql-server-dev-15 libpq-dev
	libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libzstd-dev
	libcurl4-openssl-dev libyaml-dev
	libbpf-dev libelf-dev libdw-dev clang llvm bpftool
	libmicrohttpd-dev libjson-c-dev
	elfutils debuginfod
	golang-go golang-github-google-pprof-dev python3
	linux-perf openssl libc6-dbg
	chromium nodejs
	curl bc
	openjdk-17-jdk-headless time protobuf-compiler python3-protobuf libclang-rt-14-dev
)
# npm (test/grafana installs Grafana's packages): Debian's, unless a node
# build that brings its own (and conflicts with Debian's) is installed
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends "${missing[@]}"
fi
# the web UI's npm packages (make web) and the browser test's (test/web),
# each into a folder outside the tree keyed by its package-lock.json
bash "$(dirname "$0")/../web/npm.sh" "$(dirname "$0")/../web" >/dev/null
bash "$(dirname "$0")/../web/npm.sh" "$(dirname "$0")/../test/web" >/dev/null
# Debian's postgresql package creates and starts a cluster of its own; our
# clusters are separate, so it is left alone.
