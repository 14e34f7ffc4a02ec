# OLM packaging: operator-sdk/opm tools, bundle, file-based catalog and their validation.
# Included by the Makefile; reuses VERSION, IMAGE_TAG_BASE, IMG, LOCALBIN, KUSTOMIZE, CONTROLLER_GEN.

OPERATOR_SDK_VERSION := v1.42.2
OPM_VERSION := v1.69.0
# Versioned names so bumping a version in this file rebuilds the tool instead of reusing a stale binary.
OPERATOR_SDK := $(LOCALBIN)/operator-sdk-$(OPERATOR_SDK_VERSION)
OPM := $(LOCALBIN)/opm-$(OPM_VERSION)

CHANNELS ?= alpha,stable
DEFAULT_CHANNEL ?= stable
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:latest
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
OLM_PACKAGE := agent-forge-operator
CSV_BASE := config/manifests/bases/$(OLM_PACKAGE).clusterserviceversion.yaml
BUNDLE_CSV := bundle/manifests/$(OLM_PACKAGE).clusterserviceversion.yaml

TEST_DEPS += bundle-validate bundle-verify catalog-validate

##@ OLM
.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate bundle/ (CSV, CRDs, RBAC, monitoring) for VERSION and validate it.
	$(OPERATOR_SDK) generate kustomize manifests -q --apis-dir api --input-dir config/manifests --output-dir config/manifests
	sed -i 's|^\(    containerImage: \).*|\1$(IMG)|' $(CSV_BASE)
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	@# generate bundle stamps createdAt with the current time; keep the committed stamp when nothing else changed
	@# so that regenerating is reproducible (bundle-verify).
	old="$$(mktemp)"; cp $(BUNDLE_CSV) "$$old" 2>/dev/null || :; \
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS); \
	if [ -s "$$old" ] && cmp -s <(grep -v '^    createdAt:' "$$old") <(grep -v '^    createdAt:' $(BUNDLE_CSV)); then cp "$$old" $(BUNDLE_CSV); fi; \
	rm -f "$$old"
	$(OPERATOR_SDK) bundle validate ./bundle

.PHONY: bundle-validate
bundle-validate: $(OPERATOR_SDK) ## Validate bundle/ with the operatorframework suite; fails on any error or warning.
	@out="$$($(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework 2>&1)"; rc=$$?; \
	echo "$$out"; \
	if [ $$rc -ne 0 ] || grep -qiE 'level=(warn|error)|WARN|ERRO' <<<"$$out"; then echo "bundle-validate: errors or warnings found"; exit 1; fi

.PHONY: bundle-verify
bundle-verify: ## Fail if bundle/ differs from a fresh `make bundle` (no drift).
	@$(MAKE) --no-print-directory bundle >/dev/null
	@if [ -n "$$(git status --porcelain -- bundle bundle.Dockerfile config/manifests config/manager)" ]; then \
		echo "bundle/ drifted; run 'make bundle' and commit:"; git status --porcelain -- bundle bundle.Dockerfile config/manifests config/manager; \
		git diff -- bundle config/manifests config/manager | head -80; exit 1; fi

.PHONY: bundle-build
bundle-build: ## Build the bundle image (needs a container engine).
	docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: catalog
catalog: $(OPM) ## Render bundle/ into the file-based catalog as version VERSION (catalog/agent-forge-operator/).
	hack/olm-catalog.sh "$(OPM)" "$(OLM_PACKAGE)" "$(VERSION)" "$(BUNDLE_IMG)"

.PHONY: catalog-validate
catalog-validate: $(OPM) ## Validate the file-based catalog with opm.
	$(OPM) validate catalog

.PHONY: catalog-build
catalog-build: ## Build the catalog image (needs a container engine).
	docker build -f catalog.Dockerfile -t $(CATALOG_IMG) .

# The tools are built from source in their own modules (prebuilt downloads are unavailable offline, and they
# pin Kubernetes versions different from ours). Cold builds take minutes; the result is cached in bin/.
$(OPERATOR_SDK):
	cd hack/tools/operator-sdk && GOWORK=off GOFLAGS=-mod=mod go build -trimpath -tags containers_image_openpgp \
		-ldflags "-X 'github.com/operator-framework/operator-sdk/internal/version.Version=$(OPERATOR_SDK_VERSION)' \
		-X 'github.com/operator-framework/operator-sdk/internal/version.GitVersion=$(OPERATOR_SDK_VERSION)' \
		-X 'github.com/operator-framework/operator-sdk/internal/version.KubernetesVersion=v1.33.1' \
		-X 'github.com/operator-framework/operator-sdk/internal/version.ImageVersion=$(OPERATOR_SDK_VERSION)'" \
		-o $@ github.com/operator-framework/operator-sdk/cmd/operator-sdk

$(OPM):
	cd hack/tools/opm && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=1 go build -trimpath -tags json1,containers_image_openpgp \
		-ldflags "-X 'github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$(OPM_VERSION)'" \
		-o $@ github.com/operator-framework/operator-registry/cmd/opm

.PHONY: olm-tools
olm-tools: $(OPERATOR_SDK) $(OPM) ## Build operator-sdk and opm into bin/.
