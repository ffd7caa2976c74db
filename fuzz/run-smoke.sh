#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 30) seconds, starting from the checked-in
# seed corpus (fuzz/corpus/<target>, never modified) and dictionary (fuzz/dict/<target>.dict),
# FUZZ_JOBS (default: the number of cores) targets at a time: libFuzzer runs on one core, so each
# target gets a core of its own. Fails if any target crashes, printing the reproducer (base64) so
# the log keeps it.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-30}"
jobs="${FUZZ_JOBS:-$(nproc)}"
export RUSTC_BOOTSTRAP=1
targets=$(cargo fuzz list)
[ -n "$targets" ] || { echo "no fuzz targets"; exit 1; }
cargo fuzz build -O
mkdir -p corpus-work
rm -f corpus-work/*.report
smoke_one() {
  local t="$1" work="corpus-work/$1"
  rm -rf "$work" "artifacts/$t"
  mkdir -p "$work" "corpus/$t"
  local args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=0)
  [ -f "dict/$t.dict" ] && args+=(-dict="dict/$t.dict")
  if ! cargo fuzz run -O "$t" "$work" "corpus/$t" -- "${args[@]}" > "corpus-work/$t.log" 2>&1; then
    # One block per target, printed whole, so parallel targets do not interleave.
    {
      echo "fuzz: $t FAILED"
      # The panic message comes before libFuzzer's long stack trace: print it first.
      grep -m 1 -A 3 "panicked at" "corpus-work/$t.log" || true
      tail -n 60 "corpus-work/$t.log"
      for f in artifacts/"$t"/*; do
        [ -f "$f" ] || continue
        echo "reproducer $f (base64):"; base64 -w0 "$f"; echo
      done
    } > "corpus-work/$t.report"
    cat "corpus-work/$t.report"
    return 1
  fi
  echo "fuzz: $t ${seconds}s: $(grep -E '^Done|stat::number_of_executed_units' "corpus-work/$t.log" | tail -n 1)"
}
export -f smoke_one
export seconds
failed=0
ran=0
for t in $targets; do ran=$((ran + 1)); done
echo "fuzz: $ran targets, ${seconds}s each, $jobs at a time"
printf '%s\n' $targets | xargs -P "$jobs" -I{} bash -c 'smoke_one {}' || failed=1
if [ "$failed" -ne 0 ]; then
  failed=$(ls corpus-work/*.report 2>/dev/null | wc -l)
  echo "fuzz: $ran targets run, $failed failed"
  exit 1
fi
echo "fuzz: $ran targets run, 0 failed"
