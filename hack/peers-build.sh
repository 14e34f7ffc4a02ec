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

log() { printf 'peers-build: %s\n' "$*" >&2; }

# The stamp names the sources the binary was built from: an edit of hack/peers rebuilds (a link, with the
# Go build cache kept), an unchanged tree is reused at once.
stamp="$(cd "$root/hack/peers" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)"
if [[ -x "$bin" && -f "$out/.complete" && "$(cat "$out/.complete")" == "$stamp" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$out"
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

progress_pid=""
start_progress() {
  local what="$1" started=$SECONDS
  ( while sleep 30; do log "still building $what ($((SECONDS - started))s; usually ~10 min cold on 2 cores)"; done ) &
  progress_pid=$!
}
stop_progress() { [[ -n "$progress_pid" ]] && kill "$progress_pid" 2>/dev/null || true; progress_pid=""; }
trap stop_progress EXIT

log "building capi-core (sigs.k8s.io/cluster-api ${CAPI_VERSION}) from source (~10 min cold on 2 cores; a link once the Go build cache has it)"
cd "$root/hack/peers"
start_progress capi-core
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
