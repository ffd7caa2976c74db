#!/bin/bash -eu
# OSS-Fuzz build script: one libFuzzer binary per target in $OUT, each with its seed corpus
# ($OUT/<target>_seed_corpus.zip) and, where the format has keywords, its dictionary
# ($OUT/<target>.dict). OSS-Fuzz runs it with $SRC, $OUT and the sanitizer flags set;
# fuzz/oss-fuzz/build-local.sh runs the same steps on a developer machine or in CI.
PROJECT="${PROJECT_DIR:-$SRC/k8s-bootstrap}"
cd "$PROJECT"
cargo fuzz build -O
BIN_DIR="fuzz/target/x86_64-unknown-linux-gnu/release"
for src in fuzz/fuzz_targets/*.rs; do
  target=$(basename "${src%.rs}")
  cp "$BIN_DIR/$target" "$OUT/"
  if [ -d "fuzz/corpus/$target" ] && [ -n "$(ls -A "fuzz/corpus/$target")" ]; then
    (cd "fuzz/corpus/$target" && zip -q -r "$OUT/${target}_seed_corpus.zip" .)
  fi
  if [ -f "fuzz/dict/$target.dict" ]; then
    cp "fuzz/dict/$target.dict" "$OUT/$target.dict"
  fi
done
