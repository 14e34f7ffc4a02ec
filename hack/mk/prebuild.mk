# The cold builds of cached tools side by side (hack/prebuild.sh): `make test` needs envtest's
# kube-apiserver + etcd, the Cluster API core, OLM and golangci-lint, `make demo` the first two. The test and
# demo rules list these first; the targets that build one tool alone (envtest-assets, peers, olm-peer,
# golangci-lint) then find it cached. Side by side they fill both cores. Built beside the suite's shards
# instead (tried 2026-12-07, cold, this project's 2-core machine), OLM's niced build took 24 min behind them
# and the checks queued after it became the tail.

.PHONY: prebuild-test prebuild-demo
prebuild-test: ## Build envtest assets (default and floor), CAPI core, OLM and golangci-lint side by side (cached under bin/).
	@GOLANGCI_LINT_VERSION=$(GOLANGCI_LINT_VERSION) hack/prebuild.sh envtest floor peers olm lint

prebuild-demo: ## Build envtest assets and CAPI core side by side (cached under bin/).
	@hack/prebuild.sh envtest peers
