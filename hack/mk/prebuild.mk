# The cold builds of cached tools side by side (hack/prebuild.sh): `make test` needs envtest's
# kube-apiserver + etcd, the Cluster API core, OLM and golangci-lint, `make demo` the first two. The demo
# and test rules build the first two first (the suite's shards need no more); test-checks, which
# hack/test.sh runs beside the shards, builds the rest; the targets that build one tool alone
# (envtest-assets, peers, olm-peer, golangci-lint) then find it cached.

.PHONY: prebuild-test prebuild-demo prebuild-suite
prebuild-test: ## Build envtest assets (default and floor), CAPI core, OLM and golangci-lint side by side (cached under bin/).
	@GOLANGCI_LINT_VERSION=$(GOLANGCI_LINT_VERSION) hack/prebuild.sh envtest floor peers olm lint

prebuild-demo prebuild-suite: ## Build envtest assets and CAPI core side by side (cached under bin/): what make demo and the suite's shards need.
	@hack/prebuild.sh envtest peers
