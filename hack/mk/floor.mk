# The Kubernetes floor (issue #26): the CSV declares spec.minKubeVersion; test-k8s-floor proves our CRDs install
# and validate on that Kubernetes by running the CRD validation cases of test/validation (the same tests, not a
# copy) against a kube-apiserver of that minor, built from source like the default envtest assets
# (hack/envtest-floor.sh, cached under bin/envtest). test/validation refuses to run the floor pass against any
# other minor than the CSV's. Cold build measured for 1.31.14: 13.0 CPU-minutes (user 9m28s + sys 3m34s; 28m53s of
# wall time on a 2-core machine at load 12-20, an estimated 7-9 min on CI's idle 2 cores), plus ~1 min for etcd;
# `make prebuild-test` builds it side by side with the other tools, so make test stays under 40 min on CI. Warm,
# the floor run takes ~30 s. Included by the Makefile.

TEST_DEPS += test-k8s-floor

.PHONY: envtest-assets-floor
envtest-assets-floor: ## Build kube-apiserver + etcd of the CSV's minKubeVersion (cached under bin/envtest).
	@hack/envtest-floor.sh >/dev/null

.PHONY: test-k8s-floor
test-k8s-floor: envtest-assets-floor ## Run the CRD validation cases against the kube-apiserver of the CSV's minKubeVersion.
	KUBEBUILDER_ASSETS="$$(hack/envtest-floor.sh)" AGENT_FORGE_KUBE_FLOOR=1 go test $(GO_TEST_FLAGS) ./test/validation/
