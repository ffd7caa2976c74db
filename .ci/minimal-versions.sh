#!/usr/bin/env bash
# The library crates (k8s-bootstrap with every driver) and the CLI (k8s-bootstrap-cli) build and pass their tests with the lowest versions their manifests
# declare for direct dependencies (cargo's -Z direct-minimal-versions, through RUSTC_BOOTSTRAP
# on a stable toolchain), so a user whose lockfile holds older releases is not broken. Runs on
# a copy of the tree; the checked-in Cargo.lock is not touched.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work="${TMPDIR:-/tmp}/k8s-bootstrap-minimal-versions"
rm -rf "$work"
mkdir -p "$work"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$work"
cd "$work"
# The benches are not published and compare against peers (jsonwebtoken 11) whose own floors
# are above ours: leave them out of the resolution, which concerns the published crates.
sed -i 's|members = \["crates/\*", "examples", "benches", "fuzz/checks"\]|members = ["crates/*", "examples", "fuzz/checks"]|' Cargo.toml
grep -q '"benches"' Cargo.toml && { echo "minimal-versions: could not drop benches from the workspace" >&2; exit 1; }
# Builds into the workspace's target directory: dependencies built alike are built once.
RUSTC_BOOTSTRAP=1 cargo update -Z direct-minimal-versions
CARGO_TARGET_DIR="$root/target" cargo test --quiet \
  -p jws-detached -p bootstrap-token -p clusterinfo -p exec-credential -p addon-jwt -p tls-bootstrap \
  -p delegated-auth --features delegated-auth/yaml \
  -p loopback-apiserver --features loopback-apiserver/kube \
  -p k8s-bootstrap --features k8s-bootstrap/discovery,k8s-bootstrap/token,k8s-bootstrap/exec,k8s-bootstrap/tls-bootstrap,k8s-bootstrap/node-certificates-http,k8s-bootstrap/accept,k8s-bootstrap/sidecar,k8s-bootstrap/forward-proxy,k8s-bootstrap/controllers \
  -p k8s-bootstrap-cli "$@"
rm -rf "$work"
echo "minimal-versions: 1 passed, 0 failed"
