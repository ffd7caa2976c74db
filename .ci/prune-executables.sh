#!/usr/bin/env bash
# Deletes the linked test, example and binary executables in target/debug. Once no later step
# runs the same build, they are most of what the target directory holds (each links the whole
# dependency graph), and CI machines may have little free disk. cargo links again any it needs
# later. Libraries, build scripts and proc macros stay.
set -euo pipefail
cd "$(dirname "$0")/.."
for dir in target/debug target/debug/deps target/debug/examples; do
  [ -d "$dir" ] && find "$dir" -maxdepth 1 -type f -perm -u+x ! -name '*.so' -delete
done
