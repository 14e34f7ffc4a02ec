# The cold builds of cached tools side by side (hack/prebuild.sh): `make test` needs envtest's
# kube-apiserver + etcd, the Cluster API core, OLM and golangci-lint, `make demo` the first two. The test and
# demo rules list these first; the targets that build one tool alone (envtest-assets, peers, olm-peer,
# golangci-lint) then find it cached.

.PHONY: prebuild-test prebuild-demo
prebuild-test: ## Build envtest assets (default and floor), CAPI core, OLM and golangci-lint side by side (cached under bin/).
	@GOLANGCI_LINT_VERSION=$(GOLANGCI_LINT_VERSION) hack/prebuild.sh envtest floor peers olm lint

prebuild-demo: ## Build envtest assets and CAPI core side by side (cached under bin/).
	@hack/prebuild.sh envtest peers
