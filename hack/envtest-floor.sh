#!/usr/bin/env bash
# The envtest assets at the Kubernetes floor: kube-apiserver and etcd of the lowest Kubernetes minor the CSV
# declares (spec.minKubeVersion), built by hack/envtest-assets.sh into a folder of their own under bin/envtest.
# `make test-k8s-floor` runs the CRD validation cases (test/validation) against them. The floor is set by
# the CEL libraries our CRDs use (docs/install.md, "Kubernetes floor"): isIP/isCIDR came with Kubernetes 1.30
# and are usable in CRD rules from 1.31. Prints the KUBEBUILDER_ASSETS folder as the last line of stdout.
set -euo pipefail

export K8S_VERSION=1.31.14 STAGING_VERSION=0.31.14 ETCD_VERSION=3.5.35
exec "$(dirname "${BASH_SOURCE[0]}")/envtest-assets.sh"
