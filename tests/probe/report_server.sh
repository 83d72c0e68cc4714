#!/usr/bin/env bash
# Probes the example server built on tasklatch-server with tools of its own
# (examples/report_server), as its author would before shipping it: over stdio, and over
# HTTP with two identities, both on SQLite, both eras, killed during the workload
# (`--kill --durable`), cancels aimed at each report's completion with the report file
# observed (`--effect-path`): a cancelled report that left a file is a finding. Exit
# non-zero on any finding or a server that cannot be reached.
#
# Usage: tests/probe/report_server.sh [path/to/tasklatch] [path/to/report_server] [budget per era]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
tasklatch="$(absolute "${1:-$here/../../target/release/tasklatch}")"
server="$(absolute "${2:-$here/../../target/release/examples/report_server}")"
budget="${3:-10s}"
work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
trap 'rm -rf "$work"' EXIT
common=(--tool publish_report --args '{"title": "probe", "delay_ms": 500}'
  --input-tool publish_report --input-args '{"title": "reviewed", "delay_ms": 300, "review": true}'
  --budget "$budget" --kill --durable)

echo "-- report_server over stdio, killed during the workload"
"$tasklatch" probe "${common[@]}" --out "$work/stdio" \
  --effect-path "$work/stdio-reports/{taskId}.md" \
  --stdio -- "$server" --stdio --store "sqlite:$work/stdio.db" \
  --dir "$work/stdio-reports" --lease-ms 2000 \
  | tail -3

echo "-- report_server over http, two identities, killed during the workload"
printf '{"tokens": {"probe-token-alice": "tenant-a/alice", "probe-token-bob": "tenant-b/bob"}}' \
  >"$work/tokens.json"
"$tasklatch" probe "${common[@]}" --out "$work/http" --junit "$work/http/junit.xml" \
  --effect-path "$work/http-reports/{taskId}.md" \
  --http "http://127.0.0.1:$port/mcp" \
  --token alice=probe-token-alice --token bob=probe-token-bob \
  --start "$server --http 127.0.0.1:$port --tokens $work/tokens.json --store sqlite:$work/http.db --dir $work/http-reports --lease-ms 2000" \
  | tail -3
