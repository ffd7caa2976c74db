#!/usr/bin/env bash
# Every published crate builds and passes its own tests from its unpacked .crate, alone: its
# workspace siblings also come from their .crate files (as crates.io would serve them), and
# nothing outside the unpacked directory is read.
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
  "loopback-apiserver:kube"
  "k8s-bootstrap:discovery,token,exec,tls-bootstrap,accept,sidecar,forward-proxy,controllers,delegated-auth"
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
    (
      cd "$unpacked/$dir"
      CARGO_TARGET_DIR="$root/target" \
        cargo test "${patches[@]}" ${f:+--features "$f"} --quiet
    )
  done
  bash "$root/.ci/prune-executables.sh"
done
echo "package-test: ${#crates[@]} passed, 0 failed"
