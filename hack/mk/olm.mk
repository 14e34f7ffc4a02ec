# OLM packaging: operator-sdk/opm tools, bundle, file-based catalog and their validation.
# Included by the Makefile; reuses VERSION, IMAGE_TAG_BASE, IMG, LOCALBIN, KUSTOMIZE, CONTROLLER_GEN.

OPERATOR_SDK_VERSION := v1.42.2
OPM_VERSION := v1.69.0
# Versioned names so bumping a version in this file rebuilds the tool instead of reusing a stale binary.
OPERATOR_SDK := $(LOCALBIN)/operator-sdk-$(OPERATOR_SDK_VERSION)
OPM := $(LOCALBIN)/opm-$(OPM_VERSION)

# alpha carries previews (CSV maturity alpha), stable carries releases declared stable; the default channel
# follows the maturity. A stable release: CHANNELS=alpha,stable DEFAULT_CHANNEL=stable and spec.maturity: stable.
CHANNELS ?= alpha
DEFAULT_CHANNEL ?= alpha
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:latest
BUNDLE_GEN_FLAGS ?= -q --overwrite --version $(VERSION) --channels=$(CHANNELS) --default-channel=$(DEFAULT_CHANNEL)
OLM_PACKAGE := agent-forge-operator
# OpenShift releases the bundle is offered on (com.redhat.openshift.versions): 4.18 and later, the OpenShift of
# the CSV's minKubeVersion 1.31 (the Kubernetes floor that test-k8s-floor proves; docs/install.md).
OPENSHIFT_VERSIONS ?= v4.18
CATALOG_DIR := catalog/$(OLM_PACKAGE)
# The bundle directory `make catalog` renders; older catalog entries are kept as committed history.
CATALOG_BUNDLE_DIR ?= ./bundle
CSV_BASE := config/manifests/bases/$(OLM_PACKAGE).clusterserviceversion.yaml
BUNDLE_CSV := bundle/manifests/$(OLM_PACKAGE).clusterserviceversion.yaml

TEST_DEPS += bundle-validate bundle-verify catalog-validate

##@ OLM
.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate bundle/ (CSV, CRDs, RBAC, monitoring) for VERSION and validate it; images as DIGESTS says (images.mk).
	$(OPERATOR_SDK) generate kustomize manifests -q --apis-dir api --input-dir config/manifests --output-dir config/manifests
	@# Every image by digest, or (DIGESTS=optional) by tag where the lock has none; the disconnected feature
	@# annotation says "true" only when every image is a digest, so the CSV never claims what a mirror cannot serve.
	manager="$$($(RESOLVE_IMAGE) $(IMG))"; gather="$$($(RESOLVE_IMAGE) $(MUST_GATHER_IMG))"; \
	disconnected=true; for ref in "$$manager" "$$gather"; do [[ "$$ref" == *@sha256:* ]] || disconnected=false; done; \
	sed -i 's|^\(    containerImage: \).*|\1'"$$manager"'|' $(CSV_BASE); \
	sed -i 's|^\(    features.operators.openshift.io/disconnected: \).*|\1"'"$$disconnected"'"|' $(CSV_BASE); \
	(cd config/manager && $(KUSTOMIZE) edit set image controller="$$manager"); \
	old="$$(mktemp)"; cp $(BUNDLE_CSV) "$$old" 2>/dev/null || :; rm -f bundle/manifests/*.yaml; \
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle $(BUNDLE_GEN_FLAGS); \
	$(MAKE) --no-print-directory bundle-finish MANAGER_REF="$$manager" MUST_GATHER_REF="$$gather"; \
	if [ -s "$$old" ] && cmp -s <(grep -v '^    createdAt:' "$$old") <(grep -v '^    createdAt:' $(BUNDLE_CSV)); then cp "$$old" $(BUNDLE_CSV); fi; \
	rm -f "$$old"
	@# generate bundle stamps createdAt with the current time; the committed stamp is kept when nothing else changed
	@# so that regenerating is reproducible (bundle-verify). manifests/ starts empty so that an object removed from
	@# config/ leaves the bundle too.
	$(OPERATOR_SDK) bundle validate ./bundle

# What operator-sdk does not generate: the images as named related images (operator-sdk only derives
# relatedImages from RELATED_IMAGE_* variables or --use-image-digests; mirroring needs a name; the must-gather
# image is not in any Deployment but oc-mirror must copy it for `oc adm must-gather` on a disconnected hub), and
# the OpenShift versions the bundle is offered on (a bundle annotation and image label that `generate bundle`
# rewrites away). MANAGER_REF and MUST_GATHER_REF are the references `bundle` resolved.
.PHONY: bundle-finish
bundle-finish:
	@test -n "$(MANAGER_REF)" && test -n "$(MUST_GATHER_REF)" || { echo "bundle-finish: run by make bundle (MANAGER_REF, MUST_GATHER_REF)"; exit 1; }
	@grep -q '^  relatedImages:' $(BUNDLE_CSV) || \
		sed -i 's|^  version: \(.*\)$$|  relatedImages:\n  - image: $(MANAGER_REF)\n    name: $(OLM_PACKAGE)\n  - image: $(MUST_GATHER_REF)\n    name: must-gather\n  version: \1|' $(BUNDLE_CSV)
	@grep -q '^  - image: $(MUST_GATHER_REF)$$' $(BUNDLE_CSV) || { echo "bundle-finish: relatedImages not written"; exit 1; }
	@grep -q 'com.redhat.openshift.versions' bundle/metadata/annotations.yaml || \
		printf '\n  # OpenShift versions the bundle is offered on ("v4.18" = 4.18 and later; minKubeVersion 1.31).\n  com.redhat.openshift.versions: %s\n' '$(OPENSHIFT_VERSIONS)' >> bundle/metadata/annotations.yaml
	@grep -q 'com.redhat.openshift.versions' bundle.Dockerfile || \
		sed -i 's|^# Copy files to locations specified by labels.$$|# OpenShift versions the bundle is offered on.\nLABEL com.redhat.openshift.versions=$(OPENSHIFT_VERSIONS)\n\n&|' bundle.Dockerfile

# The alpha-deprecated-apis check flags every RBAC rule on `events` as "removed in v1.25": RBAC rules carry
# no version, and only events.k8s.io/v1beta1 was removed (events.k8s.io/v1 is what the recorder uses;
# operator-framework/operator-sdk#6702). Exactly that warning, naming events and no other API, is accepted.
EVENTS_FALSE_POSITIVE := deprecated and removed in v1\.25\..*Migrate the API\(s\) for events: \(\[[^,]*\]\)"?[[:space:]]*$$

.PHONY: bundle-validate
bundle-validate: $(OPERATOR_SDK) ## Validate bundle/ with the operatorframework suite and good-practices; fails on any error or warning.
	@rc=0; out="$$($(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework 2>&1 && \
		$(OPERATOR_SDK) bundle validate ./bundle --select-optional name=good-practices 2>&1)" || rc=$$?; \
	echo "$$out"; \
	rest="$$(grep -iE 'level=(warn|error)|WARN|ERRO' <<<"$$out" | grep -vE '$(EVENTS_FALSE_POSITIVE)' || :)"; \
	if [ $$rc -ne 0 ] || [ -n "$$rest" ]; then echo "bundle-validate: errors or warnings found:"; echo "$$rest"; exit 1; fi; \
	echo "bundle-validate: 0 errors, 0 warnings (operatorframework suite and good-practices)"

.PHONY: bundle-release
bundle-release: ## Release render: bundle/ with every image by digest (from the lock or the registry), or fail.
	$(MAKE) --no-print-directory bundle DIGESTS=required

.PHONY: catalog-release
catalog-release: ## Release render of the catalog entry: the bundle image by digest (pushed by make release), or fail.
	$(MAKE) --no-print-directory catalog DIGESTS=required

.PHONY: bundle-verify
bundle-verify: $(OPERATOR_SDK) $(OPM) $(KUSTOMIZE) $(CONTROLLER_GEN) ## Fail if bundle/ or catalog/ differ from a fresh `make bundle catalog` (no drift).
	@# Regenerate in a scratch copy of the working tree so the check never rewrites files under review.
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	tar -C "$(CURDIR)" --exclude=./bin --exclude=./.git -cf - . | tar -C "$$tmp" -xf -; \
	if ! $(MAKE) -C "$$tmp" --no-print-directory LOCALBIN="$(LOCALBIN)" bundle catalog >"$$tmp/.olm-regen.log" 2>&1; then \
		cat "$$tmp/.olm-regen.log"; echo "bundle-verify: regenerating the bundle failed"; exit 1; fi; \
	drift=0; for p in bundle bundle.Dockerfile config/manifests config/manager/kustomization.yaml; do \
		diff -ru "$$p" "$$tmp/$$p" || drift=1; done; \
	diff -rq catalog "$$tmp/catalog" || drift=1; \
	if [ $$drift -ne 0 ]; then echo "bundle-verify: bundle/ or catalog/ drifted from the sources; run 'make bundle catalog' and commit."; exit 1; fi; \
	echo "bundle-verify: bundle/ and catalog/ match a fresh 'make bundle catalog'"
	@$(MAKE) --no-print-directory bundle-release-check

# The fixture digests of bundle-release-check: all zeros but the last digit, so they can never be mistaken for
# (or pass as) a pushed image. test/olm reads RELEASE_RENDER_DIR's copy of the result.
RELEASE_FIXTURE_DIGESTS := sha256:0000000000000000000000000000000000000000000000000000000000000001 \
	sha256:0000000000000000000000000000000000000000000000000000000000000002 \
	sha256:0000000000000000000000000000000000000000000000000000000000000003
RELEASE_RENDER_DIR ?=

.PHONY: bundle-release-check
bundle-release-check: $(OPERATOR_SDK) $(OPM) $(KUSTOMIZE) $(CONTROLLER_GEN) ## Release-render bundle and catalog in a scratch copy with fixture digests; fail unless every image is a digest.
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	tar -C "$(CURDIR)" --exclude=./bin --exclude=./.git -cf - . | tar -C "$$tmp" -xf -; \
	paste -d' ' <(printf '%s\n' $(IMG) $(MUST_GATHER_IMG) $(BUNDLE_IMG)) <(printf '%s\n' $(RELEASE_FIXTURE_DIGESTS)) >"$$tmp/fixture.lock"; \
	if ! $(MAKE) -C "$$tmp" --no-print-directory LOCALBIN="$(LOCALBIN)" IMAGE_DIGESTS_LOCK="$$tmp/fixture.lock" \
		bundle catalog DIGESTS=required >"$$tmp/.olm-release.log" 2>&1; then \
		cat "$$tmp/.olm-release.log"; echo "bundle-release-check: the release render failed"; exit 1; fi; \
	csv="$$tmp/$(BUNDLE_CSV)"; bad=0; \
	tagged="$$(grep -hE '^ *(- )?(image|containerImage): ' "$$csv" "$$tmp/$(CATALOG_DIR)/bundle-v$(VERSION).yaml" | grep -v '@sha256:[0-9a-f]\{64\}$$' || :)"; \
	if [ -n "$$tagged" ]; then echo "bundle-release-check: images not pinned by digest:"; echo "$$tagged"; bad=1; fi; \
	grep -q '^    features.operators.openshift.io/disconnected: "true"$$' "$$csv" || { echo "bundle-release-check: disconnected is not \"true\""; bad=1; }; \
	if [ -n "$(RELEASE_RENDER_DIR)" ]; then mkdir -p "$(RELEASE_RENDER_DIR)" && cp -r "$$tmp/bundle" "$$tmp/catalog" "$(RELEASE_RENDER_DIR)/"; fi; \
	[ $$bad -eq 0 ]; \
	echo "bundle-release-check: the release render names every image by digest and says disconnected \"true\""

.PHONY: scorecard
scorecard: $(OPERATOR_SDK) ## Run the scorecard tests of bundle/ (needs a cluster with OLM in the current kubeconfig).
	$(OPERATOR_SDK) scorecard ./bundle --wait-time 120s

.PHONY: bundle-build
bundle-build: ## Build the bundle image with docker (make images needs no engine).
	docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: catalog
catalog: $(OPM) ## Render bundle/ into the file-based catalog as catalog/agent-forge-operator/bundle-vVERSION.yaml (bundle image as DIGESTS says).
	@grep -q 'name: $(OLM_PACKAGE).v$(VERSION)$$' $(CATALOG_DIR)/package.yaml || { \
		echo "catalog: add $(OLM_PACKAGE).v$(VERSION) to the channels in $(CATALOG_DIR)/package.yaml (replaces/skipRange)"; exit 1; }
	@# opm leaves the image empty when rendering a directory; the catalog must point at the pushed bundle image.
	ref="$$($(RESOLVE_IMAGE) $(BUNDLE_IMG))"; \
	$(OPM) render $(CATALOG_BUNDLE_DIR) --output yaml | sed 's|^image: ""$$|image: '"$$ref"'|' > $(CATALOG_DIR)/bundle-v$(VERSION).yaml; \
	grep -q "^image: $$ref\$$" $(CATALOG_DIR)/bundle-v$(VERSION).yaml || { echo "catalog: bundle image not set"; exit 1; }

.PHONY: catalog-validate
catalog-validate: $(OPM) ## Validate the file-based catalog with opm.
	$(OPM) validate catalog

.PHONY: catalog-build
catalog-build: ## Build the catalog image with docker (make images needs no engine).
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
