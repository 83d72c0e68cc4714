#!/usr/bin/env bash
# Probes tasklatch itself from the command line, as a newcomer would: `tasklatch serve
# --stdio` spawned by the probe, then `tasklatch serve --http` with two identities, both
# on SQLite. Exit non-zero on any finding (the probe's exit status) or a server that cannot
# be reached.
#
# Usage: tests/probe/self.sh [path/to/tasklatch]   (default: target/release/tasklatch)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${1:-$here/../../target/release/tasklatch}"
work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
server=""
trap '[ -n "$server" ] && kill $server 2>/dev/null; rm -rf "$work"' EXIT

echo "-- stdio"
"$binary" probe --tool export --args '{"delay_ms": 1000}' --out "$work/stdio" \
  --stdio -- "$binary" serve --stdio --store "sqlite:$work/stdio.db" --exports "$work/stdio-exports" \
  | tail -1

echo "-- http, two identities"
printf '{"tokens": {"probe-token-alice": "tenant-a/alice", "probe-token-bob": "tenant-b/bob"}}' \
  >"$work/tokens.json"
"$binary" serve --http "127.0.0.1:$port" --tokens "$work/tokens.json" \
  --store "sqlite:$work/http.db" --exports "$work/http-exports" >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
"$binary" probe --http "http://127.0.0.1:$port/mcp" \
  --token alice=probe-token-alice --token bob=probe-token-bob \
  --tool export --args '{"delay_ms": 1000}' --out "$work/http" --junit "$work/http/junit.xml" \
  | tail -1
