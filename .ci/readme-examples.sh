#!/usr/bin/env bash
# Each crate README's first Rust example, copied as a reader copies it from the rendered page,
# is the whole main.rs of a fresh project that depends on that crate alone (as the README's
# `cargo add` line adds it); it must build and run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work="${TMPDIR:-/tmp}/k8s-bootstrap-readme-examples"
rm -rf "$work"
mkdir -p "$work"
# Builds into the workspace's target directory: dependencies built alike are built once.
n=0
# Arguments: the crates to check (default: every published crate).
if [ $# -gt 0 ]; then readmes=(); for c in "$@"; do readmes+=("crates/$c/README.md"); done
else readmes=(crates/*/README.md); fi
for readme in "${readmes[@]}"; do
  crate=$(basename "$(dirname "$readme")")
  grep -q '^publish *= *false' "crates/$crate/Cargo.toml" && continue
  # A binary-only crate (k8s-bootstrap-cli) has no library to `cargo add`.
  [ -f "crates/$crate/src/lib.rs" ] || continue
  project="$work/$crate-example"
  mkdir -p "$project/src"
  # The first ```rust block, with rustdoc's hidden-line markers left as they are: a hidden
  # line would not be on the rendered page, so it must not be needed.
  awk '/^```rust/ && !done { inside = 1; next } inside && /^```/ { inside = 0; done = 1 } inside { print }' \
    "$readme" > "$project/src/main.rs"
  if grep -qE '^\s*# ' "$project/src/main.rs"; then
    echo "$readme: the first example has hidden lines; a copied example would not compile" >&2
    exit 1
  fi
  cat > "$project/Cargo.toml" <<TOML
[package]
name = "$crate-readme-example"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]
TOML
  # The README's `cargo add` lines above the example, run as a reader runs them: the crate's own
  # and any other crate of this workspace (the pre-release `--git` or `--path` form) from this
  # checkout with the features the line names, any other crate (tokio, say) from the registry.
  adds=$(awk '/^```rust/ { exit } /^cargo add / { print }' "$readme")
  printf '%s\n' "$adds" | awk -v c="$crate" '$3 == c { found = 1 } END { exit !found }' \
    || adds=$(printf 'cargo add %s\n%s' "$crate" "$adds")
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    set -- $line
    if [ -f "$root/crates/$3/Cargo.toml" ]; then
      features=$(printf '%s\n' "$line" | sed -n 's/.*--features[ =]\([^ ]*\).*/\1/p')
      (cd "$project" && cargo add --quiet --path "$root/crates/$3" ${features:+--features "$features"})
    else
      (cd "$project" && cargo add --quiet "${@:3}")
    fi
  done <<< "$adds"
  echo "--- $crate"
  t0=$(date +%s)
  (cd "$project" && CARGO_TARGET_DIR="$root/target" cargo run --quiet > /dev/null)
  echo "--- $crate: $(( $(date +%s) - t0 ))s"
  n=$((n + 1))
done
echo "readme-examples: $n passed, 0 failed"
