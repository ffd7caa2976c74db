#!/usr/bin/env bash
# Leader election under load: the handover test 20 times and the cut-off tests twice, while two
# busy loops keep both cores loaded, from the test binary `cargo test` built (no
# recompiling). Bounded: 90 s at most.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(cargo test --locked --test controllers --no-run 2>&1 \
  | sed -n 's/.*Executable tests\/controllers.rs (\(.*\))/\1/p')
[ -x "$bin" ] || { echo "leader-election-load: no controllers test binary" >&2; exit 1; }
timeout 90 bash -c '
  for i in 1 2; do (while :; do :; done) & done
  trap "kill \$(jobs -p) 2>/dev/null" EXIT
  for i in $(seq 1 20); do
    "$0" -q --exact two_replicas_one_leader_and_a_handover_on_shutdown >/dev/null \
      || { echo "handover run $i failed"; exit 1; }
  done
  for i in 1 2; do
    "$0" -q cut_off >/dev/null || { echo "cut-off run $i failed"; exit 1; }
  done
  echo "leader-election-load: 22 passed, 0 failed"' "$bin"
