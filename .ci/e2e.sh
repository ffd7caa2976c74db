#!/usr/bin/env bash
# k8s-bootstrap's end-to-end tests. With K8S_BOOTSTRAP_E2E_KUBECONFIG set they run against that
# cluster; otherwise against `k8s-bootstrap serve-loopback`, so that the tests themselves are
# proven on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
# The workspace build (every driver, the CLI and the loopback server): the build `cargo test`
# made, so nothing recompiles.
if [ -n "${K8S_BOOTSTRAP_E2E_KUBECONFIG:-}" ]; then
  echo "e2e: against the cluster in $K8S_BOOTSTRAP_E2E_KUBECONFIG"
  cargo test --locked --test e2e -- --nocapture
  # The manifests apply (server-side dry run: validated and admitted, nothing created).
  for d in deploy/controllers deploy/forward-proxy; do
    kubectl --kubeconfig "$K8S_BOOTSTRAP_E2E_KUBECONFIG" apply -k "$d" --dry-run=server
  done
  exit 0
fi
# Building the e2e test builds the binary beside it (target/debug/k8s-bootstrap).
cargo test --locked --test e2e --no-run
dir=$(mktemp -d)
target/debug/k8s-bootstrap serve-loopback --admin-kubeconfig "$dir/admin.conf" > "$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -s "$dir/admin.conf" ] && break; sleep 0.1; done
[ -s "$dir/admin.conf" ] || { cat "$dir/log"; echo "serve-loopback did not start" >&2; exit 1; }
echo "e2e: K8S_BOOTSTRAP_E2E_KUBECONFIG is not set; running against serve-loopback"
K8S_BOOTSTRAP_E2E_KUBECONFIG="$dir/admin.conf" \
  cargo test --locked --test e2e -- --nocapture
