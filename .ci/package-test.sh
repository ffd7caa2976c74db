#!/usr/bin/env bash
# Every published crate builds and passes its own tests from its unpacked .crate, alone, with its
# default features (as a distribution or crater runs them): its workspace siblings also come
# from their .crate files (as crates.io would serve them), and nothing outside the unpacked
# directory is read.
#
# The cores' feature-gated tests run from the .crate too (the features after the colon). Those
# of k8s-bootstrap and loopback-apiserver are not run again here: the workspace tests run them,
# and what could make them fail from the .crate alone is checked for every crate instead:
# - every file git tracks under the crate's directory is in the .crate (except the manifest's
#   `exclude`s);
# - no packaged source reads a file above the crate's directory (`include_str!("../..`,
#   `CARGO_MANIFEST_DIR` joined with `..`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# name and the features its unpacked feature-gated tests enable (dev-dependencies pick
# k8s-openapi's version); each crate is also tested with its default features alone.
crates=(
  "jws-detached:"
  "bootstrap-token:yaml,k8s-openapi"
  "clusterinfo:k8s-openapi"
  "exec-credential:"
  "addon-jwt:${ADDON_JWT_FEATURES:-http}"
  "tls-bootstrap:k8s-openapi,yaml"
  "delegated-auth:yaml"
  "loopback-apiserver:"
  "k8s-bootstrap:"
  "k8s-bootstrap-cli:"
)

# Builds into the workspace's target directory: dependencies built alike are built once.
cargo package --workspace --exclude k8s-bootstrap-examples --exclude k8s-bootstrap-benches \
  --exclude k8s-bootstrap-fuzz-checks --locked --no-verify

# Outside the repository, so the unpacked crates are not taken for members of its workspace.
unpacked="${TMPDIR:-/tmp}/k8s-bootstrap-package-test"
rm -rf "$unpacked"
mkdir -p "$unpacked"
patches=()
for entry in "${crates[@]}"; do
  name=${entry%%:*}
  file=$(ls "$root"/target/package/"$name"-[0-9]*.crate)
  tar -xzf "$file" -C "$unpacked"
  dir=$(basename "$file" .crate)
  # Dependencies at the workspace lock's versions, so what the steps before built is reused
  # (resolving afresh took the newest releases and rebuilt most of the graph: minutes). The
  # newest releases are the downstream step's concern. Cargo drops what a crate does not use.
  [ -f "$unpacked/$dir/Cargo.lock" ] || cp "$root/Cargo.lock" "$unpacked/$dir/Cargo.lock"
  patches+=(--config "patch.crates-io.$name.path=\"$unpacked/$dir\"")
done

for entry in "${crates[@]}"; do
  name=${entry%%:*}
  file=$(ls "$root"/target/package/"$name"-[0-9]*.crate)
  excluded=$(sed -n 's/^exclude *= *\[\(.*\)\]/\1/p' "crates/$name/Cargo.toml" | tr -d '" ' | tr ',' '\n')
  missing=$(comm -23 <(git ls-files "crates/$name" | sed "s|^crates/$name/||" | sort) \
    <(tar -tzf "$file" | sed 's|^[^/]*/||' | sort) | grep -vxF -e "$excluded" -e "" || true)
  [ -z "$missing" ] || { echo "$name: tracked files missing from the .crate: $missing" >&2; exit 1; }
  outside=$(tar -xzOf "$file" --wildcards '*.rs' | grep -nE '(include_str|include_bytes)!\("\.\./\.\.|CARGO_MANIFEST_DIR"\)\)?\.join\("\.\.' || true)
  [ -z "$outside" ] || { echo "$name: packaged sources read above the crate: $outside" >&2; exit 1; }
done

for entry in "${crates[@]}"; do
  name=${entry%%:*}
  features=${entry#*:}
  dir=$(basename "$(ls "$root"/target/package/"$name"-[0-9]*.crate)" .crate)
  echo "--- $dir (features: ${features:-default})"
  for f in LICENSE-APACHE LICENSE-MIT README.md; do
    [ -f "$unpacked/$dir/$f" ] && [ ! -L "$unpacked/$dir/$f" ] || { echo "$dir: $f missing from the package" >&2; exit 1; }
  done
  # With its default features, as a distribution or crater runs it, then with the features its
  # feature-gated tests need.
  for f in "" ${features:+"$features"}; do
    echo "--- $dir: cargo test ${f:+--features $f}"
    t0=$(date +%s)
    (
      cd "$unpacked/$dir"
      CARGO_TARGET_DIR="$root/target" \
        cargo test "${patches[@]}" ${f:+--features "$f"} --quiet
    )
    echo "--- $dir: ${f:-default features}: $(( $(date +%s) - t0 ))s"
  done
  bash "$root/.ci/prune-executables.sh"
done
echo "package-test: ${#crates[@]} passed, 0 failed"
