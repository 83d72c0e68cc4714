#!/usr/bin/env bash
# Side-by-side server benchmark, in one run: starts four MCP task servers on loopback and
# loads each with `tasklatch bench http --targets`, rounds alternating, every figure a
# ratio to the TypeScript SDK's reference server.
#
#   scripts/bench-compare.sh [bench http flags: --seconds 8 --rounds 3 --connections 16 --workload create …]
#
# The servers:
#   tasklatch-sqlite   tasklatch serve --http, SQLite, synchronous=full (durable), 2025-11-25
#   tasklatch-pg       tasklatch serve --http, a private PostgreSQL cluster started here
#                      (initdb; fsync and synchronous_commit on, as shipped), 2025-11-25
#   ts-reference       the TypeScript SDK 1.32.2 (McpServer + InMemoryTaskStore),
#                      tests/interop/ts/reference-server.mjs, 2025-11-25 (needs
#                      `npm ci --prefix tests/interop/ts`); its `export` with delay_ms 0
#                      touches nothing, like slow_compute with seconds 0 on the others
#   tasklatch-sqlite-2026  the first, spoken to in 2026-07-28
#   rmcp               rmcp 3.11.0's in-memory TaskManager (examples/rmcp_task_server.rs),
#                      2026-07-28 only
# With TASKLATCH_BENCH_BEFORE=PATH (a `tasklatch` binary built at an earlier commit, with
# the postgres feature) two more targets run beside them in the same rounds, for a
# before/after measured side by side: tasklatch-sqlite-before (its own SQLite file) and
# tasklatch-pg-before (its own database in the same PostgreSQL cluster).
# tasklatch runs TASKLATCH_BENCH_WORKERS workers (default 4, as `serve`; 16 measured fewer
# creates/s: more workers write more, beside the admissions). The CPU of tasklatch-pg counts the
# PostgreSQL backends too. Everything started here is
# stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

# One feature set for both, so the library is built once.
cargo build --release --quiet --features postgres --bins --example rmcp_task_server
tasklatch=target/release/tasklatch

scratch=$(mktemp -d /tmp/tasklatch-compare-XXXXXX)
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
as_postgres=()
[ "$(id -u)" -eq 0 ] && as_postgres=(runuser -u postgres --)
cleanup() {
  # `start` runs in command substitutions, so it keeps its pids in a file, not a variable.
  for pid in $(cat "$scratch/pids" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  if [ -f "$scratch/pg/postmaster.pid" ]; then
    "${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# The endpoint a started server printed in its `listening …` line.
url_of() { grep -o 'http://[^ ]*/mcp' "$scratch/$1.out" | head -1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts "$@" in the background, its stdout in $scratch/$name.out; waits for "listening".
start() {
  local name=$1; shift
  "$@" >"$scratch/$name.out" 2>"$scratch/$name.err" &
  local pid=$!
  echo "$pid" >>"$scratch/pids"
  for _ in $(seq 200); do
    grep -q listening "$scratch/$name.out" 2>/dev/null && { echo "$pid"; return; }
    kill -0 "$pid" 2>/dev/null || { echo "$name exited: $(cat "$scratch/$name.err")" >&2; exit 1; }
    sleep 0.1
  done
  echo "$name did not say it listens within 20 s" >&2
  exit 1
}

echo '{"tokens": {"bench-token-0001": "tenant-bench/a", "bench-token-0002": "tenant-bench/b"}}' >"$scratch/tokens.json"
# Throughput, not the limits, is measured: lift the per-caller budgets.
# --conformance-tools adds slow_compute, the tool the rmcp server has too: a task that
# sleeps its `seconds` and touches nothing (tasklatch's own `export` writes and fsyncs a
# file per task, a cost the other servers' tools do not have).
lifted=(--polls-per-second 100000000 --poll-burst 100000000 --waits-per-caller 100000
        --requests-per-caller 100000 --sessions-per-caller 100000 --workers "${TASKLATCH_BENCH_WORKERS:-4}"
        --conformance-tools)

sqlite_port=$(free_port)
sqlite_pid=$(start tasklatch-sqlite "$tasklatch" serve --http "127.0.0.1:$sqlite_port" \
  --tokens "$scratch/tokens.json" --store "sqlite:$scratch/tasks.db" \
  --exports "$scratch/exports-sqlite" "${lifted[@]}")

pg_port=$(free_port)
mkdir -p "$scratch/pg"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$scratch" "$scratch/pg"
"${as_postgres[@]}" "$pg_bin/initdb" -D "$scratch/pg" -U postgres --auth=trust -E UTF8 >/dev/null
"${as_postgres[@]}" "$pg_bin/pg_ctl" -D "$scratch/pg" -l "$scratch/pg.log" -w \
  -o "-p $pg_port -k $scratch -c listen_addresses=127.0.0.1 -c max_connections=100" start >/dev/null
postmaster=$(head -1 "$scratch/pg/postmaster.pid")
pg_pid=$(start tasklatch-pg "$tasklatch" serve --http "127.0.0.1:$(free_port)" \
  --tokens "$scratch/tokens.json" --store "postgres://postgres@127.0.0.1:$pg_port/postgres" \
  --exports "$scratch/exports-pg" "${lifted[@]}")
pg_url=$(url_of tasklatch-pg)
sqlite_url=$(url_of tasklatch-sqlite)

export_args='"tool": "export", "args": {"name": "bench", "delay_ms": 0}, "long_args": {"name": "bench", "delay_ms": 600000}'
compute_args='"tool": "slow_compute", "args": {"seconds": 0}, "long_args": {"seconds": 120}'
tokens='"tokens": ["bench-token-0001", "bench-token-0002"]'

before_targets=""
if [ -n "${TASKLATCH_BENCH_BEFORE:-}" ]; then
  before_sqlite_pid=$(start tasklatch-sqlite-before "$TASKLATCH_BENCH_BEFORE" serve \
    --http "127.0.0.1:$(free_port)" --tokens "$scratch/tokens.json" \
    --store "sqlite:$scratch/tasks-before.db" --exports "$scratch/exports-sqlite-before" "${lifted[@]}")
  "${as_postgres[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres before
  before_pg_pid=$(start tasklatch-pg-before "$TASKLATCH_BENCH_BEFORE" serve \
    --http "127.0.0.1:$(free_port)" --tokens "$scratch/tokens.json" \
    --store "postgres://postgres@127.0.0.1:$pg_port/before" \
    --exports "$scratch/exports-pg-before" "${lifted[@]}")
  before_sqlite_url=$(url_of tasklatch-sqlite-before)
  before_pg_url=$(url_of tasklatch-pg-before)
  before_targets=",
    { \"name\": \"tasklatch-sqlite-before\", \"url\": \"$before_sqlite_url\", \"era\": \"2025-11-25\",
      \"pids\": [$before_sqlite_pid], $tokens, $compute_args },
    { \"name\": \"tasklatch-pg-before\", \"url\": \"$before_pg_url\", \"era\": \"2025-11-25\",
      \"pids\": [$before_pg_pid, $postmaster], $tokens, $compute_args }"
fi

ts_port=$(free_port)
ts_pid=$(start ts-reference node tests/interop/ts/reference-server.mjs --port "$ts_port" --quiet)

rmcp_pid=$(start rmcp target/release/examples/rmcp_task_server "127.0.0.1:$(free_port)")
rmcp_url=$(url_of rmcp)

cat >"$scratch/targets.json" <<JSON
{ "reference": "ts-reference",
  "targets": [
    { "name": "ts-reference", "url": "http://127.0.0.1:$ts_port/mcp", "era": "2025-11-25",
      "pids": [$ts_pid], $export_args },
    { "name": "tasklatch-sqlite", "url": "$sqlite_url", "era": "2025-11-25",
      "pids": [$sqlite_pid], $tokens, $compute_args },
    { "name": "tasklatch-pg", "url": "$pg_url", "era": "2025-11-25",
      "pids": [$pg_pid, $postmaster], $tokens, $compute_args },
    { "name": "tasklatch-sqlite-2026", "url": "$sqlite_url", "era": "2026-07-28",
      "pids": [$sqlite_pid], $tokens, $compute_args },
    { "name": "rmcp", "url": "$rmcp_url", "era": "2026-07-28", "pids": [$rmcp_pid],
      $compute_args }$before_targets ] }
JSON
"$tasklatch" bench http --targets "$scratch/targets.json" "$@"
