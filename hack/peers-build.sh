#!/usr/bin/env bash
# Builds the peer controllers tests and the demo run as separate processes (hack/peers, its own module:
# the real Cluster API core controllers, sigs.k8s.io/cluster-api v1.14.2), offline through the Go module
# proxy. Idempotent: a finished build is reused instantly. Prints the binary's path as the last line of
# stdout; progress goes to stderr.
set -euo pipefail

CAPI_VERSION="${CAPI_VERSION:-v1.14.2}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${PEERS_DIR:-$root/bin/peers/capi-core-${CAPI_VERSION}}"
bin="$out/capi-core"

# shellcheck source=hack/peer-build-lib.sh
source "$root/hack/peer-build-lib.sh"
log() { printf 'peers-build: %s\n' "$*" >&2; }

stamp="$(source_stamp "$root/hack/peers")"
if [[ -x "$bin" && -f "$out/.complete" && "$(cat "$out/.complete")" == "$stamp" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$out"
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

trap stop_progress EXIT

log "building capi-core (sigs.k8s.io/cluster-api ${CAPI_VERSION}) from source (~10 min cold on 2 cores; a link once the Go build cache has it)"
cd "$root/hack/peers"
start_progress capi-core "usually ~10 min cold on 2 cores"
# The version CAPI reports (version.Get(), the user agent) comes from these variables, as its Makefile sets them.
major="${CAPI_VERSION#v}"; major="${major%%.*}"
minor="${CAPI_VERSION#v*.}"; minor="${minor%%.*}"
pkg=sigs.k8s.io/cluster-api/version
go build -trimpath -ldflags "-s -w -X ${pkg}.gitVersion=${CAPI_VERSION} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean" \
  -o "$bin.tmp.$$" ./cmd/capi-core >&2
stop_progress
mv "$bin.tmp.$$" "$bin"
echo "$stamp" > "$out/.complete"
log "ready"
echo "$bin"
