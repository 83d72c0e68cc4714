#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 20) on the stable toolchain
# (cargo-fuzz, libFuzzer, `--sanitizer none`), starting from the committed seed corpus
# (fuzz/corpus/TARGET, never written to: new inputs go to a scratch copy), and prints each
# target's total execs and execs/s. Exit 1 if any target finds a crash: its input is in
# fuzz/artifacts/TARGET/; fix it, then commit the input to fuzz/corpus/TARGET/ so every
# later run replays it first (the regression test).
#
#   fuzz/run.sh [SECONDS] [TARGET…]      CI: 15 s each; nightly: 600 s each
#
# TASKLATCH_FUZZ_BUILD (read here): `release` (the default; cargo-fuzz's optimised build)
# or `dev` (this crate's dev profile, opt-level 1: compiles in about half the time, runs
# fewer execs a second; what CI's 15-s smoke run uses).
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(store_url jsonrpc_framing jsonrpc_handler http_request fixture_loader tokens_loader
                                     scenario_loader failure_record_loader)

# The pinned cargo-fuzz (0.13.2 measured to work on stable with --sanitizer none).
if ! cargo fuzz --version 2>/dev/null | grep -q '0.13.2'; then
  cargo install cargo-fuzz --version 0.13.2 --locked --quiet
fi
# cargo-fuzz sets its own RUSTFLAGS and appends these: the `sim` feature the scenario and
# failure-record targets use needs `--cfg madsim` (the committed .cargo/config.toml's
# rustflags do not apply once RUSTFLAGS is set).
unset CARGO_ENCODED_RUSTFLAGS
export RUSTFLAGS="--cfg madsim"
case "${TASKLATCH_FUZZ_BUILD:-release}" in
  release) build=() ;;
  dev) build=(--dev) ;;
  *) echo "TASKLATCH_FUZZ_BUILD=${TASKLATCH_FUZZ_BUILD}: release or dev" >&2; exit 2 ;;
esac
cargo fuzz build --sanitizer none "${build[@]}"

scratch=$(mktemp -d /tmp/tasklatch-fuzz-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
failed=0
printf '%-22s %12s %10s %8s\n' target execs execs/s new
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target"
  log="$scratch/$target.log"
  if ! cargo fuzz run --sanitizer none "${build[@]}" "$target" "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
    failed=1
    echo "$target: CRASH (input in fuzz/artifacts/$target/)"
    grep -E 'panicked|ERROR|Test unit written' "$log" | head -5
    continue
  fi
  stat() { grep -E "stat::$1:" "$log" | awk '{print $2}'; }
  printf '%-22s %12s %10s %8s\n' "$target" "$(stat number_of_executed_units)" \
    "$(stat average_exec_per_sec)" "$(stat new_units_added)"
done
exit $failed
