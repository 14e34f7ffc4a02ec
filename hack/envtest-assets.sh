#!/usr/bin/env bash
# Builds kube-apiserver and etcd for controller-runtime's envtest from source, offline,
# through the Go module proxy (no download bucket is reachable from CI or dev machines).
# Idempotent: a finished build is reused instantly. Prints the KUBEBUILDER_ASSETS folder
# as the last line of stdout; progress goes to stderr.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.2}"
STAGING_VERSION="${STAGING_VERSION:-0.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
# Build tags of kube-apiserver. The Kubernetes floor (1.29) sets providerless: its in-tree cloud providers
# need k8s.io/legacy-cloud-providers, which the module proxy does not serve at v0.29.x; envtest uses none.
K8S_BUILD_TAGS="${K8S_BUILD_TAGS:-}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
assets="${ENVTEST_ASSETS_DIR:-$root/bin/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}}"
# One source folder per version set, so building a second set (the Kubernetes floor) never rewrites
# the go.mod another build is using.
work="$root/bin/envtest/src/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"

log() { printf 'envtest-assets: %s\n' "$*" >&2; }

if [[ -x "$assets/kube-apiserver" && -x "$assets/etcd" && -f "$assets/.complete" ]]; then
  echo "$assets"
  exit 0
fi

mkdir -p "$assets" "$work/apiserver" "$work/etcd"
# One build per version set at a time: a second caller (another checkout sharing bin/, a parallel make
# target) waits for the first instead of compiling the same packages again and rewriting its go.mod.
exec 9>"$assets/.lock"
if ! flock -n 9; then
  log "waiting for another build of these assets to finish"
  flock 9
  if [[ -x "$assets/kube-apiserver" && -x "$assets/etcd" && -f "$assets/.complete" ]]; then
    echo "$assets"
    exit 0
  fi
fi
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

progress_pid=""
start_progress() {
  local what="$1" started=$SECONDS
  ( while sleep 30; do log "still building $what ($((SECONDS - started))s; one-time, usually 6-12 min cold on 2 cores)"; done ) &
  progress_pid=$!
}
stop_progress() { [[ -n "$progress_pid" ]] && kill "$progress_pid" 2>/dev/null || true; progress_pid=""; }
trap stop_progress EXIT

if [[ ! -x "$assets/etcd" ]]; then
  log "building etcd v${ETCD_VERSION} from source (one-time)"
  cd "$work/etcd"
  cat > go.mod <<MOD
module envtest.local/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v${ETCD_VERSION}
MOD
  cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  start_progress etcd
  go mod tidy >&2 2>&1 || true
  go build -trimpath -ldflags "-s -w" -o "$assets/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
  stop_progress
  mv "$assets/etcd.tmp" "$assets/etcd"
fi

if [[ ! -x "$assets/kube-apiserver" ]]; then
  log "building kube-apiserver v${K8S_VERSION} from source (one-time)"
  cd "$work/apiserver"
  # The staging modules that k8s.io/kubernetes requires at v0.0.0, read from its own go.mod: the set changes
  # between releases (1.29 still has legacy-cloud-providers, 1.32 adds externaljwt), so the floor build
  # (K8S_VERSION of minKubeVersion) and the default one each get theirs.
  gomod="$(cd / && go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "$gomod" ]] || { log "no go.mod for k8s.io/kubernetes v${K8S_VERSION} from the module proxy"; exit 1; }
  mapfile -t staging < <(sed -n 's|^[[:space:]]*k8s\.io/\([A-Za-z0-9._-]*\) v0\.0\.0$|\1|p' "$gomod" | sort -u)
  ((${#staging[@]})) || { log "k8s.io/kubernetes v${K8S_VERSION} requires no staging module at v0.0.0"; exit 1; }
  {
    echo "module envtest.local/apiserver"
    echo
    echo "go 1.26.0"
    echo
    echo "godebug default=go1.26"
    echo
    echo "require k8s.io/kubernetes v${K8S_VERSION}"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do
      echo "	k8s.io/$m => k8s.io/$m v${STAGING_VERSION}"
    done
    echo ")"
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
  start_progress kube-apiserver
  go mod tidy >&2 2>&1 || true
  go build -trimpath -tags "${K8S_BUILD_TAGS}" -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION}" \
    -o "$assets/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
  stop_progress
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
fi

touch "$assets/.complete"
log "ready"
echo "$assets"
