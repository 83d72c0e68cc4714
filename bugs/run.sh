#!/usr/bin/env bash
# The bug corpus: each bugs/*.patch is a slip written against the runtime or the MCP
# server (none of them a named mutant), applied one at a time to a scratch copy of HEAD
# and run through the engines; the table says which engine caught it. An oracle finds
# what it was shown: these are bugs it was not shown.
#
#   bugs/run.sh [--engines sim,probe,tests] [--out DIR] [PATCH...]
#
# Engines (default sim,probe):
#   sim    every scenario's default seeds (`tasklatch sim`), on a `--features sim` build;
#          caught when any seed has a violation.
#   probe  tests/probe/self.sh on a plain build: the probe with kills against `tasklatch
#          serve` over stdio and HTTP with two identities; caught on any finding.
#   tests  `cargo test --features postgres --test it` (the plain test suite; minutes).
# A patch that does not apply or build is reported as such, never as missed.
#
# Environment: TASKLATCH_BUGS_PROBE_BUDGET (workload per era for the probe, default 5s).
# The patched builds share DIR/target, never the checkout's own: there a patched
# `tasklatch` replaces the checkout's binary, and cargo, finding the checkout fresh, does
# not link it again (a later hunt ran a patched server).
# Exit: 0 when every patch was run (caught or not), 1 when one did not apply or build,
# 2 on bad usage.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
engines="sim,probe"
out="$root/target/bugs"
patches=()
while [ $# -gt 0 ]; do
  case "$1" in
    --engines) engines="${2:?--engines needs a list}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    -*) echo "bugs/run.sh: unknown flag $1" >&2; exit 2 ;;
    *) patches+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"); shift ;;
  esac
done
if [ ${#patches[@]} -eq 0 ]; then
  patches=("$root"/bugs/*.patch)
fi
for engine in ${engines//,/ }; do
  case "$engine" in sim|probe|tests) ;; *) echo "bugs/run.sh: unknown engine $engine" >&2; exit 2 ;; esac
done
budget="${TASKLATCH_BUGS_PROBE_BUDGET:-5s}"
mkdir -p "$out"
tree="$out/tree"
export CARGO_TARGET_DIR="$out/target"
if [ ! -d "$tree/.git" ] && [ ! -f "$tree/.git" ]; then
  git -C "$root" worktree add --detach "$tree" HEAD >/dev/null
fi
git -C "$tree" checkout --detach -q "$(git -C "$root" rev-parse HEAD)"
table="$out/table.md"
{
  echo "| bug | layer | ${engines//,/ | } |"
  echo "|---|---|$(for _ in ${engines//,/ }; do printf -- '---|'; done)"
} >"$table"
status=0

# One engine's verdict on the built tree: "caught: WHY" or "missed".
run_engine() {
  local engine="$1" log="$2"
  case "$engine" in
    sim)
      local found=""
      for scenario in "$tree"/scenarios/*.json; do
        "$CARGO_TARGET_DIR/debug/tasklatch-sim" sim --scenario "$scenario" >>"$log" 2>&1
        if [ $? -eq 1 ] && [ -z "$found" ]; then
          found="$(basename "$scenario" .json): $(grep -m1 -o 'I[0-9A-Z]* violated[^(]*' "$log" | tail -1)"
        fi
      done
      if [ -n "$found" ]; then echo "caught: $found"; else echo "missed"; fi ;;
    probe)
      if "$tree/tests/probe/self.sh" "$CARGO_TARGET_DIR/debug/tasklatch" "$budget" >"$log" 2>&1; then
        echo "missed"
      else
        # The first mode whose probe had findings, and how many.
        echo "caught: $(awk '/^-- /{mode=$2; sub(/,$/, "", mode)}
          /[0-9]+ findings? \(/{match($0, /[0-9]+ findings? \([^)]*\)/);
          print mode ": " substr($0, RSTART, RLENGTH); exit}' "$log")"
      fi ;;
    tests)
      if (cd "$tree" && cargo test --features postgres --test it) >"$log" 2>&1; then
        echo "missed"
      else
        echo "caught: $(grep -m1 -oE '^test [^ ]+ \.\.\. FAILED' "$log" | sed 's/ \.\.\. FAILED//; s/^test //')"
      fi ;;
  esac
}

for patch in "${patches[@]}"; do
  name="$(basename "$patch" .patch)"
  layer="$(head -1 "$patch" | sed -n 's/^[^(]*(\([a-z]*\)).*/\1/p')"
  echo "== $name" >&2
  git -C "$tree" checkout -q -f HEAD -- . && git -C "$tree" clean -qfd
  if ! git -C "$tree" apply "$patch" 2>"$out/$name.apply.log"; then
    echo "| $name | $layer | does not apply: $(head -1 "$out/$name.apply.log") |" >>"$table"
    status=1
    continue
  fi
  built=1
  case ",$engines," in *,sim,*)
    (cd "$tree" && cargo build --features sim --bin tasklatch) >"$out/$name.build.log" 2>&1 \
      && cp "$CARGO_TARGET_DIR/debug/tasklatch" "$CARGO_TARGET_DIR/debug/tasklatch-sim" || built=0 ;;
  esac
  case ",$engines," in *,probe,*|*,tests,*)
    (cd "$tree" && cargo build --features postgres --bin tasklatch) >>"$out/$name.build.log" 2>&1 || built=0 ;;
  esac
  if [ $built -eq 0 ]; then
    echo "| $name | $layer | does not build (see $name.build.log) |" >>"$table"
    status=1
    continue
  fi
  row="| $name | $layer |"
  for engine in ${engines//,/ }; do
    verdict="$(run_engine "$engine" "$out/$name.$engine.log")"
    echo "   $engine: $verdict" >&2
    row="$row ${verdict//|//} |"
  done
  echo "$row" >>"$table"
done
git -C "$tree" checkout -q -f HEAD -- . && git -C "$tree" clean -qfd
cat "$table"
exit $status
