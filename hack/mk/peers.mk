# Peer controllers that tests and the demo run as separate processes: the real Cluster API core controllers
# (sigs.k8s.io/cluster-api v1.14.2: Cluster, Machine, MachineSet, MachineDeployment) built from hack/peers
# (its own module) by hack/peers-build.sh into bin/peers/. test/sim/capicore starts the binary
# ($AGENT_FORGE_CAPI_CORE_BINARY overrides it). Cold build ~10 min on 2 cores, then cached.

.PHONY: peers
peers: ## Build the real Cluster API core controllers (bin/peers/capi-core-v1.14.2/capi-core) from hack/peers.
	@hack/peers-build.sh >/dev/null

TEST_DEPS += peers

# The demo runs them too (hack/mk/prebuild.mk builds them for it, beside the envtest assets).
