#!/usr/bin/env bash
# Probes tasklatch itself from the command line, as a newcomer would, killing it during the
# workload: `tasklatch serve --stdio` spawned by the probe, then `tasklatch serve --http`
# started by the probe (`--start`) with two identities, both on SQLite, both eras, with
# `--kill --durable`, cancels aimed at each export's completion with its file observed
# (`--effect-path`). Exit non-zero on any finding (the probe's exit status) or a server
# that cannot be reached.
#
# Usage: tests/probe/self.sh [path/to/tasklatch] [budget per era, default 10s]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="$(cd "$(dirname "${1:-$here/../../target/release/tasklatch}")" && pwd)/$(basename "${1:-tasklatch}")"
budget="${2:-10s}"
work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
trap 'rm -rf "$work"' EXIT
common=(--tool export --args '{"delay_ms": 500}' --input-tool export
  --input-args '{"delay_ms": 300, "confirm": true}' --budget "$budget" --kill --durable)

echo "-- stdio, killed during the workload"
"$binary" probe "${common[@]}" --out "$work/stdio" \
  --effect-path "$work/stdio-exports/{taskId}.json" \
  --stdio -- "$binary" serve --stdio --store "sqlite:$work/stdio.db" \
  --exports "$work/stdio-exports" --lease-ms 2000 \
  | tail -3

echo "-- http, two identities, killed during the workload"
printf '{"tokens": {"probe-token-alice": "tenant-a/alice", "probe-token-bob": "tenant-b/bob"}}' \
  >"$work/tokens.json"
"$binary" probe "${common[@]}" --out "$work/http" --junit "$work/http/junit.xml" \
  --effect-path "$work/http-exports/{taskId}.json" \
  --http "http://127.0.0.1:$port/mcp" \
  --token alice=probe-token-alice --token bob=probe-token-bob \
  --start "$binary serve --http 127.0.0.1:$port --tokens $work/tokens.json --store sqlite:$work/http.db --exports $work/http-exports --lease-ms 2000" \
  | tail -3
