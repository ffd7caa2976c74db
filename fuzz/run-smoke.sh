#!/usr/bin/env bash
# Runs every fuzz target for FUZZ_SECONDS (default 30) seconds, starting from the checked-in
# seed corpus (fuzz/corpus/<target>, never modified) and dictionary (fuzz/dict/<target>.dict).
# Fails on the first crash, printing the reproducer (base64) so the log keeps it.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-30}"
export RUSTC_BOOTSTRAP=1
targets=$(cargo fuzz list)
[ -n "$targets" ] || { echo "no fuzz targets"; exit 1; }
cargo fuzz build -O
failed=0
ran=0
for t in $targets; do
  work="corpus-work/$t"
  rm -rf "$work" "artifacts/$t"
  mkdir -p "$work" "corpus/$t"
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=0)
  [ -f "dict/$t.dict" ] && args+=(-dict="dict/$t.dict")
  echo "fuzz: $t for ${seconds}s"
  if ! cargo fuzz run -O "$t" "$work" "corpus/$t" -- "${args[@]}" > "corpus-work/$t.log" 2>&1; then
    failed=$((failed + 1))
    echo "fuzz: $t FAILED"
    # The panic message comes before libFuzzer's long stack trace: print it first.
    grep -m 1 -A 3 "panicked at" "corpus-work/$t.log" || true
    tail -n 60 "corpus-work/$t.log"
    for f in artifacts/"$t"/*; do
      [ -f "$f" ] || continue
      echo "reproducer $f (base64):"; base64 -w0 "$f"; echo
    done
  else
    grep -E '^Done|stat::number_of_executed_units' "corpus-work/$t.log" | tail -n 1 || true
  fi
  ran=$((ran + 1))
done
echo "fuzz: $ran targets run, $failed failed"
[ "$failed" -eq 0 ]
