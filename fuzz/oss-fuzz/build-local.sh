#!/usr/bin/env bash
# Performs fuzz/oss-fuzz/build.sh's steps locally (stable toolchain with RUSTC_BOOTSTRAP=1,
# as OSS-Fuzz's nightly would), then checks that every target landed in $OUT with its seed
# corpus and that each binary runs its corpus once without crashing.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# $OUT when given is kept; a directory made here is removed on exit (37 sanitizer builds are
# gigabytes).
kept="${OUT:-}"
if [ -n "$kept" ]; then
  out="$kept"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
export RUSTC_BOOTSTRAP=1 OUT="$out" SRC="$(dirname "$root")" PROJECT_DIR="$root"
command -v zip >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq zip >/dev/null; }
bash "$root/fuzz/oss-fuzz/build.sh"
count=0
for src in "$root"/fuzz/fuzz_targets/*.rs; do
  target=$(basename "${src%.rs}")
  [ -x "$out/$target" ] || { echo "missing binary: $target" >&2; exit 1; }
  [ -f "$out/${target}_seed_corpus.zip" ] || { echo "missing seed corpus: $target" >&2; exit 1; }
  "$out/$target" -runs=0 "$root/fuzz/corpus/$target" >/dev/null 2>&1 \
    || { echo "seed corpus replay failed: $target" >&2; exit 1; }
  count=$((count + 1))
done
echo "oss-fuzz local build: $count targets, each with a seed corpus${kept:+, in $kept}"
