# agent-forge-operator
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

VERSION ?= 0.2.0
IMAGE_TAG_BASE ?= quay.io/containeroo/agent-forge-operator
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)

LOCALBIN := $(CURDIR)/bin
export GOTOOLCHAIN := local
CONTROLLER_GEN := $(LOCALBIN)/controller-gen
CONTROLLER_TOOLS_VERSION := v0.23.0
KUSTOMIZE := $(LOCALBIN)/kustomize
KUSTOMIZE_VERSION := v5.8.2

# Extra prerequisites of `make test`, appended by hack/mk/*.mk (e.g. bundle and catalog validation).
TEST_DEPS :=

.PHONY: all
all: build

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-22s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

include $(sort $(wildcard hack/mk/*.mk))

##@ Development
.PHONY: manifests
# RBAC comes in two roles because OLM grants them differently per install mode (docs/install.md):
# manager-role holds what is cluster-scoped or lives outside the watched namespaces (the CSV's
# clusterPermissions); manager-namespaced-role holds what the pools' namespaces need (the CSV's
# permissions: OLM copies it into each target namespace of a MultiNamespace OperatorGroup and makes
# it cluster-wide only for AllNamespaces). A marker in a package listed in neither set is not granted,
# and test/rbac's whole-job scenario fails with the refusal.
CLUSTER_RBAC_PATHS := paths="./controllers/ejection/..." paths="./internal/..."
NAMESPACED_RBAC_PATHS := paths="./controllers/pool/..." paths="./controllers/vsphereagent/..." paths="./controllers/staticip/..." paths="./controllers/preflight/..."
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." $(CLUSTER_RBAC_PATHS) output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=manager-namespaced-role $(NAMESPACED_RBAC_PATHS) output:rbac:artifacts:config=config/rbac/namespaced

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: verify-generated
verify-generated: manifests generate ## Fail if generated files differ from what is committed.
	@if [ -n "$$(git status --porcelain -- api config/crd config/rbac)" ]; then \
		echo "generated files drifted; run 'make manifests generate' and commit:"; git status --porcelain -- api config/crd config/rbac; git diff -- api config/crd config/rbac | head -50; exit 1; fi

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver + etcd for envtest from source (cached under bin/envtest).
	@hack/envtest-assets.sh >/dev/null

GO_TEST_FLAGS ?= -race -count=1 -timeout 35m
# When make began, for hack/test.sh's closing "timing:" line (the prebuilds and checks before the tests).
MAKE_STARTED := $(shell date +%s)

# The long tool builds (hack/prebuild.sh: envtest and the floor, CAPI core, OLM, golangci-lint, side by side)
# and verify-generated (it rewrites config/crd in place) come first; hack/test.sh then runs test-checks (vet,
# lint, the bundle, catalog, rules, docs and floor checks and the small tools they build) beside the
# suite's shards, before the other packages.
.PHONY: test
test: prebuild-test verify-generated envtest-assets ## Run every test (envtest + simulator), -race, and every check.
	GO_TEST_FLAGS="$(GO_TEST_FLAGS)" AGENT_FORGE_TEST_BEFORE=$$(($$(date +%s) - $(MAKE_STARTED))) hack/test.sh

.PHONY: test-checks
test-checks: prebuild-test vet envtest-assets $(TEST_DEPS) ## make test's checks besides the Go tests and verify-generated (hack/test.sh runs them beside the shards).

.PHONY: lint
lint: fmt-check vet golangci-lint ## Static checks: gofmt, go vet, golangci-lint (hack/mk/lint.mk). Part of `make test`.

.PHONY: fmt-check
fmt-check: ## Fail if a tracked Go file is not gofmt-formatted.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

##@ Build
.PHONY: build
build: ## Build the manager binary.
	CGO_ENABLED=0 go build -trimpath -o bin/manager ./cmd

.PHONY: run
run: manifests ## Run the manager against the current kubeconfig.
	go run ./cmd --leader-elect=false --metrics-secure=false

.PHONY: install
install: manifests $(KUSTOMIZE) ## Install our CRDs into the current cluster.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests $(KUSTOMIZE) ## Remove our CRDs.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found -f -

.PHONY: deploy
deploy: manifests $(KUSTOMIZE) ## Deploy the operator with kustomize.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: docker-build
docker-build: ## Build the manager image with docker (make images needs no engine).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

##@ Demo and benchmarks
.PHONY: demo
demo: prebuild-demo envtest-assets ## Run the whole operator loop on an embedded API server and vSphere simulator.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" DEMO_STANDBY="$(DEMO_STANDBY)" go run ./hack/demo

.PHONY: bench-vsphere
bench-vsphere: ## Our vSphere client vs govc, per VM, on one simulator.
	go run ./hack/bench/vsphere

.PHONY: bench-iso
bench-iso: ## Streaming ISO cache vs download-then-upload, 1 GiB.
	go run ./hack/bench/iso

.PHONY: bench-scale
BENCH_MEMORY ?= 1
bench-scale: envtest-assets ## 50 pools x 20 waiting AgentMachines on envtest + simulator, then (BENCH_MEMORY=1) the manager binary's peak RSS and heap at that size without and with 10 000 foreign objects.
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" go run ./hack/bench/scale
	@if [ "$(BENCH_MEMORY)" = 1 ]; then $(MAKE) --no-print-directory bench-memory; fi

.PHONY: bench-memory
bench-memory: envtest-assets ## The manager binary's peak RSS and heap at 50 pools x 20 VMs, without and with 10 000 foreign objects (MEMORY_ARGS: flags).
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" go run ./hack/bench/memory $(MEMORY_ARGS)

.PHONY: bench-latency
bench-latency: envtest-assets ## Demand->bound p50/p99 with and without warm standby, side by side (LATENCY_ARGS: flags).
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" go run ./hack/bench/latency $(LATENCY_ARGS)

##@ Tools
$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN) GOFLAGS= go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

$(KUSTOMIZE):
	GOBIN=$(LOCALBIN) GOFLAGS= go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
