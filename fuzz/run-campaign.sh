#!/usr/bin/env bash
# A long fuzzing campaign of the network-facing targets (what a cluster, a plugin or a client can
# send us): each runs FUZZ_SECONDS (default 600) from its checked-in corpus and dictionary,
# FUZZ_JOBS (default: the number of cores) at a time. Afterwards the inputs that add coverage
# to the checked-in corpus (libFuzzer's -merge=1) are kept, at most FUZZ_KEEP (default 100) per
# target, the smallest first, so the seeds grow without bloating the repository; commit them.
# Prints one line per target: executions, new seeds, result. Fails if any target crashed, and
# prints the reproducer (base64).
#
#   bash fuzz/run-campaign.sh                       # all network-facing targets, 10 min each
#   FUZZ_SECONDS=60 bash fuzz/run-campaign.sh clusterinfo_kubeconfig
set -euo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-600}"
jobs="${FUZZ_JOBS:-$(nproc)}"
export RUSTC_BOOTSTRAP=1
if [ $# -gt 0 ]; then targets=("$@"); else
  targets=(
    clusterinfo_kubeconfig clusterinfo_discovery clusterinfo_configmap clusterinfo_ca_bundle
    jws_detached_verify jws_detached_verify_header_json jws_detached_verify_kubernetes
    bootstrap_token_authenticate bootstrap_token_secret_json
    exec_credential_plugin_output exec_credential_exec_info exec_credential_authenticator
    addon_jwt_verify addon_jwt_jwks addon_jwt_sidecar addon_jwt_add_auth
    addon_jwt_http1_response addon_jwt_http1_differential
    tls_bootstrap_csr_json tls_bootstrap_csr_yaml tls_bootstrap_certificate tls_bootstrap_request
    delegated_auth_token_review delegated_auth_access_review delegated_auth_oidc_discovery
    delegated_auth_configmap delegated_auth_bearer_header
    delegated_auth_request_info delegated_auth_rbac_objects delegated_auth_proxy_config
  )
fi
cargo fuzz build -O
mkdir -p campaign
run_one() {
  local t="$1" work="campaign/$1"
  rm -rf "$work" "artifacts/$t"
  mkdir -p "$work" "corpus/$t"
  local args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
  [ -f "dict/$t.dict" ] && args+=(-dict="dict/$t.dict")
  local before; before=$(ls "corpus/$t" | wc -l)
  if cargo fuzz run -O "$t" "$work" "corpus/$t" -- "${args[@]}" > "campaign/$t.log" 2>&1; then
    local merged="campaign/$t.merged"
    rm -rf "$merged"
    cp -r "corpus/$t" "$merged"
    cargo fuzz run -O "$t" "$merged" "$work" -- -merge=1 > "campaign/$t.merge.log" 2>&1
    # The merge's additions (files not already seeds), smallest first, at most FUZZ_KEEP.
    local added=0 f
    while read -r f; do
      [ -e "corpus/$t/$(basename "$f")" ] && continue
      [ "$added" -ge "${FUZZ_KEEP:-100}" ] && break
      cp "$f" "corpus/$t/" && added=$((added + 1))
    done < <(find "$merged" -type f -printf '%s %p\n' | sort -n | cut -d' ' -f2-)
    local execs; execs=$(grep -m1 'stat::number_of_executed_units' "campaign/$t.log" | awk '{print $2}')
    local adding; adding=$(( $(ls "$merged" | wc -l) - before ))
    echo "$t: ${seconds}s, ${execs:-?} executions, $adding inputs add coverage, $added kept as seeds, ok"
  else
    echo "$t: FAILED after ${seconds}s or less"
    grep -m 1 -A 3 "panicked at" "campaign/$t.log" || true
    tail -n 40 "campaign/$t.log"
    for f in artifacts/"$t"/*; do
      [ -f "$f" ] || continue
      echo "reproducer $f (base64):"; base64 -w0 "$f"; echo
    done
    return 1
  fi
}
export -f run_one
export seconds FUZZ_KEEP
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}' | tee campaign/summary.txt
! grep -q FAILED campaign/summary.txt
