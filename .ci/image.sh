#!/usr/bin/env bash
# Builds the k8s-bootstrap container image from the Containerfile and checks it: the image's
# root filesystem is exported and its binary runs from it (chroot, as user 65532, with the
# image's own /etc and libraries): `--help`, `--version` (naming the labelled commit), and a
# name lookup of `localhost`. The image has no shell, runs as 65532:65532 and carries the OCI
# labels (version, revision, source, title, licenses).
#
#   bash .ci/image.sh [--binary PATH] [--tag NAME] [--archive PATH] [--install-podman]
#
# Without --binary, builds the release binary first: statically linked (glibc,
# `-C target-feature=+crt-static`, so the target is named and the flags reach no build script
# or proc-macro) with the features aws-lc-rs,controllers,sidecar (FEATURES overrides). With
# --binary, takes that binary as it is; a dynamically linked one gets exactly the shared
# libraries `ldd` lists, at their paths (CI passes the debug binary its tests built).
# --archive writes the image as a docker-archive tarball (`kind load image-archive`).
# --install-podman installs podman with apt-get when it is missing (CI); otherwise a missing
# podman is an error. Nothing here needs a registry or the network: the base is `scratch`.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
tag="localhost/k8s-bootstrap:dev"
archive=""
install_podman=false
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --archive) archive="$2"; shift 2 ;;
    --install-podman) install_podman=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p;}' "$0"; exit 0 ;;
    *) echo "image.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done

fail() { echo "image.sh: $*" >&2; exit 1; }

# podman, from Debian's packages in CI. Its absence is an error, never a skipped check.
if ! command -v podman >/dev/null 2>&1; then
  $install_podman || fail "podman is not installed (apt-get install podman, or pass --install-podman)"
  command -v apt-get >/dev/null 2>&1 || fail "podman is not installed and apt-get is not available to install it"
  [ "$(id -u)" = 0 ] || fail "podman is not installed, and installing it with apt-get needs root"
  echo "installing podman (apt-get)"
  apt-get update -qq || fail "apt-get update failed: cannot install podman"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman >/dev/null \
    || fail "apt-get install podman failed"
fi
podman --version

metadata=$(cargo metadata --format-version 1 --no-deps --locked)
field() { python3 -c 'import json, sys
m = json.load(sys.stdin)
if sys.argv[1] == "target":
    print(m["target_directory"])
else:
    print(next(p[sys.argv[1]] for p in m["packages"] if p["name"] == "k8s-bootstrap-cli"))' "$1" <<<"$metadata"; }
version=$(field version)
license=$(field license)
source_url=$(field repository)
target_dir=$(field target)
# The commit, as build.rs finds it for `--version`: K8S_BOOTSTRAP_GIT_COMMIT, else the clone's.
revision="${K8S_BOOTSTRAP_GIT_COMMIT:-}"
if [ -z "$revision" ] && git ls-files --error-unmatch Cargo.toml >/dev/null 2>&1; then
  revision=$(git rev-parse HEAD)
fi
if [ -z "$revision" ]; then
  echo "image.sh: no git commit (not a clone, K8S_BOOTSTRAP_GIT_COMMIT unset): the revision label says unknown" >&2
  revision=unknown
fi

if [ -z "$binary" ]; then
  features="${FEATURES:-aws-lc-rs,controllers,sidecar}"
  echo "building the release binary (static, features $features)"
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" cargo build --release --locked \
    --target x86_64-unknown-linux-gnu -p k8s-bootstrap-cli --no-default-features --features "$features"
  binary="$target_dir/x86_64-unknown-linux-gnu/release/k8s-bootstrap"
fi
[ -x "$binary" ] || fail "no binary at $binary"

# The build context: the binary and the root filesystem, nothing else (the repository's target
# directory can hold gigabytes).
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/context"
cp -R deploy/image/rootfs "$work/context/rootfs"
cp "$binary" "$work/context/k8s-bootstrap"
# ldd's `name => /path (addr)` lines and the loader's `/path (addr)`; the vDSO has no path, and
# a static(-pie) binary has none of them.
libs=$( (ldd "$binary" 2>/dev/null || true) | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
if [ -n "$libs" ]; then
  echo "dynamically linked: adding the libraries ldd lists"
  for lib in $libs; do
    mkdir -p "$work/context/rootfs$(dirname "$lib")"
    cp -L "$lib" "$work/context/rootfs$lib"
    echo "  $lib"
  done
else
  echo "statically linked"
fi

# Storage: the configured driver (overlay), else vfs in a store of its own (overlay cannot
# mount on some file systems, e.g. inside another container); IMAGE_STORAGE_DRIVER=vfs
# chooses vfs at once.
vfs=(podman --storage-driver vfs --root "${XDG_DATA_HOME:-$HOME/.local/share}/k8s-bootstrap/vfs-storage")
pm=(podman)
[ "${IMAGE_STORAGE_DRIVER:-}" = vfs ] && pm=("${vfs[@]}")
probe="$work/probe"
mkdir -p "$probe" && printf 'FROM scratch\nLABEL probe=1\n' >"$probe/Containerfile"
if ! "${pm[@]}" build -q --network=none --pull=never -t localhost/k8s-bootstrap-probe "$probe" >/dev/null 2>"$work/probe.log"; then
  [ "${pm[*]}" != "${vfs[*]}" ] || fail "podman build fails with vfs storage: $(cat "$work/probe.log")"
  echo "the default storage driver fails ($(tail -n 1 "$work/probe.log")); using vfs"
  pm=("${vfs[@]}")
  "${pm[@]}" build -q --network=none --pull=never -t localhost/k8s-bootstrap-probe "$probe" >/dev/null \
    || fail "podman build fails with vfs storage too"
fi
"${pm[@]}" rmi -f localhost/k8s-bootstrap-probe >/dev/null 2>&1 || true
echo "storage: $("${pm[@]}" info --format '{{.Store.GraphDriverName}} in {{.Store.GraphRoot}}')"

echo "building $tag (version $version, revision $revision)"
# --no-cache: podman 4.3 reuses a cached LABEL layer when only a --build-arg it expands changed
# (a stale revision label); --layers=false: no intermediate images left behind.
"${pm[@]}" build --no-cache --layers=false --network=none --pull=never -f Containerfile -t "$tag" \
  --build-arg BINARY=k8s-bootstrap --build-arg ROOTFS=rootfs \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  "$work/context"

# The image's configuration.
inspect() { "${pm[@]}" image inspect --format "$1" "$tag"; }
[ "$(inspect '{{.Config.User}}')" = "65532:65532" ] || fail "user is $(inspect '{{.Config.User}}'), not 65532:65532"
[ "$(inspect '{{json .Config.Entrypoint}}')" = '["/usr/local/bin/k8s-bootstrap"]' ] \
  || fail "entrypoint is $(inspect '{{json .Config.Entrypoint}}')"
label() { inspect "{{index .Config.Labels \"org.opencontainers.image.$1\"}}"; }
for pair in "version=$version" "revision=$revision" "source=$source_url" "title=k8s-bootstrap" "licenses=$license"; do
  name="${pair%%=*}" want="${pair#*=}"
  [ "$(label "$name")" = "$want" ] || fail "label org.opencontainers.image.$name is '$(label "$name")', not '$want'"
done

# The root filesystem, exported from a created (never started) container.
root="$work/rootfs"
mkdir -p "$root"
cid=$("${pm[@]}" create "$tag")
"${pm[@]}" export "$cid" | tar -x -C "$root"
"${pm[@]}" rm "$cid" >/dev/null
echo "the image's files:"
(cd "$root" && find . -not -type d | sort | sed 's/^/  /')
# Exactly the files put in: the root filesystem and the binary, nothing from anywhere else.
expected=$( (cd "$work/context/rootfs" && find . -not -type d; echo ./usr/local/bin/k8s-bootstrap) | sort)
[ "$(cd "$root" && find . -not -type d | sort)" = "$expected" ] \
  || fail "the image's files are not the root filesystem and the binary: expected $expected"
for shell in bin/sh bin/bash bin/busybox usr/bin/sh; do
  if [ -e "$root/$shell" ] || [ -L "$root/$shell" ]; then fail "the image has /$shell"; fi
done
found=$(cd "$root" && find . \( -name sh -o -name bash -o -name dash -o -name busybox -o -name ash \) -print)
[ -z "$found" ] || fail "the image has a shell: $found"
[ "$(stat -c '%u:%g %a' "$root/usr/local/bin/k8s-bootstrap")" = "0:0 555" ] \
  || fail "the binary is $(stat -c '%u:%g %a' "$root/usr/local/bin/k8s-bootstrap"), not root-owned 555"
grep -q '^nonroot:x:65532:65532:' "$root/etc/passwd" || fail "/etc/passwd does not name user 65532"

# The binary, run from the exported root filesystem as the image's user: the image's loader,
# libraries and /etc, nothing of the host's.
in_image() {
  if [ "$(id -u)" = 0 ]; then
    chroot --userspec=65532:65532 "$root" /usr/local/bin/k8s-bootstrap "$@"
  else
    unshare --map-root-user chroot "$root" /usr/local/bin/k8s-bootstrap "$@"
  fi
}
in_image --help >"$work/help" || fail "--help fails in the image"
grep -q 'controllers' "$work/help" || fail "--help lists no controllers command: $(cat "$work/help")"
grep -q 'forward-proxy' "$work/help" \
  || fail "--help lists no forward-proxy command: $(cat "$work/help")"
got=$(in_image --version) || fail "--version fails in the image"
# `k8s-bootstrap 0.1.0 (commit 0bc1dc9fa224)`: the labelled version, and a prefix of the
# labelled commit (none when it is unknown).
commit=$(sed -n 's/^k8s-bootstrap [^ ]* (commit \([0-9a-zA-Z]*\))$/\1/p' <<<"$got")
case "$got" in
  "k8s-bootstrap $version"|"k8s-bootstrap $version (commit "*) ;;
  *) fail "--version says '$got'; the version label says $version" ;;
esac
if [ "$revision" = unknown ]; then
  [ -z "$commit" ] || fail "--version names commit $commit; the revision label says unknown"
else
  if [ -z "$commit" ] || [ "${revision#"$commit"}" = "$revision" ]; then
    fail "--version says '$got'; the revision label says $revision"
  fi
fi
echo "in the image: $got"
# A name lookup (getaddrinfo) through the image's /etc/nsswitch.conf and /etc/hosts: join
# against localhost on a closed port must fail to connect, not to resolve.
mkdir -p "$root/tmp/out"
chown 65532:65532 "$root/tmp/out" 2>/dev/null || chmod 0777 "$root/tmp/out"
set +e
in_image join localhost:1 --token abcdef.0123456789abcdef \
  --discovery-token-unsafe-skip-ca-verification --discovery-timeout 2s \
  --tls-bootstrap-kubeconfig /tmp/out/bootstrap.conf >"$work/join" 2>&1
set -e
# hyper-util's connector says `dns error: ...` when the lookup fails, `tcp connect error: ...`
# (refused; unreachable without a loopback interface) once it has an address.
! grep -qi 'dns error\|lookup\|name resolution\|name or service' "$work/join" \
  || fail "localhost does not resolve in the image: $(cat "$work/join")"
grep -q 'tcp connect error' "$work/join" \
  || fail "join localhost:1 in the image did not get to connecting: $(cat "$work/join")"
echo "in the image: localhost resolves ($(grep -o 'tcp connect error: [^(]*' "$work/join" | head -n 1))"

if [ -n "$archive" ]; then
  rm -f "$archive"
  "${pm[@]}" save --format docker-archive -o "$archive" "$tag"
  echo "wrote $archive (kind load image-archive $archive)"
fi
echo "image $tag: ok ($(inspect '{{.Size}}') bytes)"
