#!/usr/bin/env bash
# Regenerates the external CRDs of test/crds that come from buildable API modules (HostedCluster, NodePool,
# HostedControlPlane, Cluster, Machine, MachineSet, MachineDeployment, MachineDrainRule, IPAddressClaim,
# IPAddress) from the real API types: controller-gen's crd generator over the HyperShift and Cluster API
# packages pinned in hack/crdgen/go.mod, post-processed by hack/crdgen (its own module, so the project's
# go.mod never gains these dependencies). See test/crds/README.md.
#
# Usage: hack/crdgen.sh [OUTDIR]     (default: test/crds; `make verify-test-crds` writes to a temp dir and diffs)
# Env:   CONTROLLER_GEN (default bin/controller-gen, built with make when missing),
#        CONTROLLER_TOOLS_VERSION (the version the Makefile pins; a different binary only warns).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/test/crds}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

controller_gen="${CONTROLLER_GEN:-$root/bin/controller-gen}"
if [ ! -x "$controller_gen" ]; then
	if [ "$controller_gen" != "$root/bin/controller-gen" ]; then
		echo "crdgen: $controller_gen is not executable" >&2
		exit 1
	fi
	make -C "$root" --no-print-directory "$controller_gen" >&2
fi
want="${CONTROLLER_TOOLS_VERSION:-v0.23.0}"
have="$("$controller_gen" --version | sed 's/^Version: *//')"
if [ "$have" != "$want" ]; then
	echo "crdgen: warning: $controller_gen is $have, the Makefile pins $want (delete it and rerun to rebuild)" >&2
fi

cd "$root/hack/crdgen"
# Outside the project's module and any go.work; modules come from the proxy on first use, then the cache.
export GOWORK=off GOFLAGS=-mod=readonly GOTOOLCHAIN=local
go run . -controller-gen "$controller_gen" -out "$out"
