#!/usr/bin/env bash
# Builds the real Operator Lifecycle Manager that test/olm/real runs as processes against envtest: the olm
# and catalog operators of github.com/operator-framework/operator-lifecycle-manager (hack/olm, its own
# module), and copies OLM's CRDs (github.com/operator-framework/api crds/, the version hack/olm/go.mod pins)
# beside them. Idempotent: a finished build is reused instantly. Prints the output directory as the last
# line of stdout (olm, catalog, crds/); progress goes to stderr.
set -euo pipefail

OLM_VERSION="${OLM_VERSION:-v0.46.0}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OLM_DIR:-$root/bin/peers/olm-${OLM_VERSION}}"

# shellcheck source=hack/peer-build-lib.sh
source "$root/hack/peer-build-lib.sh"
log() { printf 'olm-build: %s\n' "$*" >&2; }

stamp="$(source_stamp "$root/hack/olm")"
if [[ -x "$out/olm" && -x "$out/catalog" && -f "$out/.complete" && "$(cat "$out/.complete")" == "$stamp" ]]; then
  echo "$out"
  exit 0
fi

mkdir -p "$out"
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

trap stop_progress EXIT

cd "$root/hack/olm"
mod=github.com/operator-framework/operator-lifecycle-manager
# go list -m names a module's directory only once it is downloaded: on an empty module cache, download it.
go mod download github.com/operator-framework/api
api_dir="$(go list -m -f '{{.Dir}}' github.com/operator-framework/api)"
[[ -n "$api_dir" && -d "$api_dir/crds" ]] || { log "operator-framework/api has no crds/ in the module cache ($api_dir)"; exit 1; }
rm -rf "$out/crds.tmp.$$" && mkdir -p "$out/crds.tmp.$$"
cp "$api_dir"/crds/operators.coreos.com_*.yaml "$out/crds.tmp.$$/"
chmod u+w "$out/crds.tmp.$$"/*.yaml
rm -rf "$out/crds" && mv "$out/crds.tmp.$$" "$out/crds"

log "building olm and catalog (${mod} ${OLM_VERSION}) from source (~11 CPU-minutes cold; a link once the Go build cache has it)"
start_progress "olm + catalog" "~11 CPU-minutes cold: ~6-8 min on an idle 2-core machine"
# One go build for both: the ~1,200 shared packages compile once. OLM's own Makefile builds with the json1
# tag and sets the version through these variables.
ldflags="-s -w -X ${mod}/pkg/version.OLMVersion=${OLM_VERSION} -X ${mod}/pkg/version.GitCommit=${OLM_VERSION}"
rm -rf "$out/bin.tmp.$$" && mkdir -p "$out/bin.tmp.$$"
nice -n 10 go build -trimpath -tags json1 -ldflags "$ldflags" -o "$out/bin.tmp.$$/" "${mod}/cmd/olm" "${mod}/cmd/catalog" >&2
stop_progress
mv "$out/bin.tmp.$$/olm" "$out/olm"
mv "$out/bin.tmp.$$/catalog" "$out/catalog"
rmdir "$out/bin.tmp.$$"
echo "$stamp" > "$out/.complete"
log "ready"
echo "$out"
