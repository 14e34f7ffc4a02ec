#!/usr/bin/env bash
# Builds the cached tools that `make test` and `make demo` need side by side instead of one after another:
# envtest's kube-apiserver + etcd (hack/envtest-assets.sh), those of the Kubernetes floor
# (hack/envtest-floor.sh), the real Cluster API core (hack/peers-build.sh), the real OLM
# (hack/olm-build.sh) and golangci-lint (hack/golangci-lint.sh). Each is a long Go build whose last phases (big packages,
# the link) leave a core idle; run together they fill it. Each script keeps its own cache under bin/ and
# returns at once when that is complete, and prints its own progress lines on stderr.
# Usage: hack/prebuild.sh envtest|floor|peers|olm|lint ...
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
declare -A script=([envtest]=envtest-assets.sh [floor]=envtest-floor.sh [peers]=peers-build.sh [olm]=olm-build.sh [lint]=golangci-lint.sh)

pids=() names=()
for name in "$@"; do
  [[ -n "${script[$name]:-}" ]] || { echo "prebuild: unknown build $name (envtest, floor, peers, olm, lint)" >&2; exit 2; }
  "$root/hack/${script[$name]}" >/dev/null &
  pids+=("$!") names+=("$name")
done
# Stop the others when interrupted, so no build outlives make.
trap 'kill "${pids[@]}" 2>/dev/null || true' INT TERM

failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done
if ((${#failed[@]})); then
  echo "prebuild: failed: ${failed[*]} (its messages are above)" >&2
  exit 1
fi
