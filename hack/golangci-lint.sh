#!/usr/bin/env bash
# Builds golangci-lint (v2) from source, offline, through the Go module proxy (no release download is
# reachable from CI or dev machines), into bin/golangci-lint-<version>/. Idempotent: a finished build is
# reused instantly. Prints the binary's path as the last line of stdout; progress goes to stderr.
set -euo pipefail

GOLANGCI_LINT_VERSION="${GOLANGCI_LINT_VERSION:-v2.15.0}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${GOLANGCI_LINT_DIR:-$root/bin/golangci-lint-${GOLANGCI_LINT_VERSION}}"
bin="$out/golangci-lint"

log() { printf 'golangci-lint-build: %s\n' "$*" >&2; }

if [[ -x "$bin" && -f "$out/.complete" && "$(cat "$out/.complete")" == "$GOLANGCI_LINT_VERSION" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$out"
# GOFLAGS= : `go install pkg@version` builds in module mode outside our module; our GOFLAGS must not leak in.
export GOWORK=off GOFLAGS= CGO_ENABLED=0 GOTOOLCHAIN=local

progress_pid=""
start_progress() {
  local what="$1" started=$SECONDS
  ( while sleep 30; do log "still building $what ($((SECONDS - started))s; usually 3-6 min cold on 2 cores)"; done ) &
  progress_pid=$!
}
stop_progress() { [[ -n "$progress_pid" ]] && kill "$progress_pid" 2>/dev/null || true; progress_pid=""; }
trap stop_progress EXIT

log "building golangci-lint ${GOLANGCI_LINT_VERSION} from source (one-time; a link once the Go build cache has it)"
start_progress golangci-lint
tmp="$(mktemp -d "$out/.build.XXXXXX")"
GOBIN="$tmp" go install -trimpath github.com/golangci/golangci-lint/v2/cmd/golangci-lint@"${GOLANGCI_LINT_VERSION}" >&2
stop_progress
mv "$tmp/golangci-lint" "$bin"
rmdir "$tmp"
echo "$GOLANGCI_LINT_VERSION" > "$out/.complete"
log "ready"
echo "$bin"
