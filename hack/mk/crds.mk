# Test-only CRDs of external kinds (test/crds) generated from the real API types by hack/crdgen.sh:
# HostedCluster, NodePool, HostedControlPlane (HyperShift), Cluster, Machine, MachineSet, MachineDeployment,
# MachineDrainRule, IPAddressClaim, IPAddress (Cluster API).
# Included by the Makefile; reuses CONTROLLER_GEN and CONTROLLER_TOOLS_VERSION.

TEST_CRDS_GENERATED := hypershift.openshift.io_hostedclusters.yaml hypershift.openshift.io_nodepools.yaml \
	hypershift.openshift.io_hostedcontrolplanes.yaml \
	cluster.x-k8s.io_clusters.yaml cluster.x-k8s.io_machines.yaml cluster.x-k8s.io_machinesets.yaml \
	cluster.x-k8s.io_machinedeployments.yaml cluster.x-k8s.io_machinedrainrules.yaml \
	ipam.cluster.x-k8s.io_ipaddressclaims.yaml ipam.cluster.x-k8s.io_ipaddresses.yaml

TEST_DEPS += verify-test-crds

##@ Test CRDs
.PHONY: test-crds
test-crds: $(CONTROLLER_GEN) ## Regenerate the external CRDs of test/crds from the pinned HyperShift / Cluster API types.
	CONTROLLER_GEN=$(CONTROLLER_GEN) CONTROLLER_TOOLS_VERSION=$(CONTROLLER_TOOLS_VERSION) hack/crdgen.sh

.PHONY: verify-test-crds
verify-test-crds: $(CONTROLLER_GEN) ## Fail if the generated CRDs of test/crds differ from a fresh `make test-crds`.
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	CONTROLLER_GEN=$(CONTROLLER_GEN) CONTROLLER_TOOLS_VERSION=$(CONTROLLER_TOOLS_VERSION) hack/crdgen.sh "$$tmp"; \
	drift=0; \
	for f in $(TEST_CRDS_GENERATED); do \
		if [ ! -f "$$tmp/$$f" ]; then echo "verify-test-crds: hack/crdgen.sh no longer writes $$f"; drift=1; \
		elif ! cmp -s "$$tmp/$$f" "test/crds/$$f"; then echo "verify-test-crds: test/crds/$$f drifted:"; \
			diff -u "test/crds/$$f" "$$tmp/$$f" | head -40 || :; drift=1; fi; \
	done; \
	for f in "$$tmp"/*.yaml; do \
		case " $(TEST_CRDS_GENERATED) " in *" $${f##*/} "*) ;; *) echo "verify-test-crds: new generated file $${f##*/}: list it in hack/mk/crds.mk"; drift=1;; esac; \
	done; \
	src="$$(go list -m -f '{{.Dir}}' github.com/openshift/api)/config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_apiservers-Default.crd.yaml"; \
	if ! tail -n +4 test/crds/config.openshift.io_apiservers.yaml | cmp -s - "$$src"; then \
		echo "verify-test-crds: test/crds/config.openshift.io_apiservers.yaml is not openshift/api's $$src (after its 3 header lines)"; drift=1; fi; \
	if [ $$drift -ne 0 ]; then echo "verify-test-crds: run 'make test-crds' and commit test/crds."; exit 1; fi; \
	echo "verify-test-crds: test/crds matches a fresh 'make test-crds'"
