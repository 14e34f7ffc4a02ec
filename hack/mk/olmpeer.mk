# The real Operator Lifecycle Manager that test/olm/realolm runs as processes against envtest: the olm and
# catalog operators of github.com/operator-framework/operator-lifecycle-manager v0.46.0, built from hack/olm
# (its own module) by hack/olm-build.sh into bin/peers/olm-v0.46.0/ with OLM's CRDs (operator-framework/api)
# beside them ($AGENT_FORGE_OLM_DIR overrides the directory). Cold: ~11 CPU-minutes (8 user + 3 system, empty Go
# caches), then cached.

.PHONY: olm-peer
olm-peer: ## Build the real OLM (bin/peers/olm-v0.46.0/{olm,catalog,crds}) from hack/olm.
	@hack/olm-build.sh >/dev/null

TEST_DEPS += olm-peer
