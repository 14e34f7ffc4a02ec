# Images by digest (issue #26, "disconnected for real"): a mirrored cluster pulls through an
# ImageDigestMirrorSet, which only redirects pulls by digest, so a bundle that claims
# features.operators.openshift.io/disconnected "true" must name every image by @sha256:.
# hack/image-digests.sh resolves each image the bundle and catalog reference: an image given by digest is kept,
# otherwise the lock IMAGE_DIGESTS_LOCK (written by the push targets below from buildx's --metadata-file) or,
# for a release render only, the registry (skopeo/crane with a deadline). Included by the Makefile; reuses IMG,
# IMAGE_TAG_BASE, VERSION (BUNDLE_IMG comes from olm.mk).

MUST_GATHER_IMG ?= $(IMAGE_TAG_BASE)-must-gather:v$(VERSION)
IMAGE_DIGESTS_LOCK ?= $(CURDIR)/config/manifests/image-digests.lock
# optional: the development render (what bundle/ and catalog/ hold until a release pushed its images): images
# the lock knows are pinned, the rest stay by tag and the CSV says disconnected "false"; never asks a registry,
# so it is reproducible (bundle-verify). required: the release render; an image that cannot be resolved fails.
DIGESTS ?= optional
RESOLVE_IMAGE = IMAGE_DIGESTS_LOCK="$(IMAGE_DIGESTS_LOCK)" hack/image-digests.sh resolve $(if $(filter required,$(DIGESTS)),--required)

ifeq ($(filter optional required,$(DIGESTS)),)
$(error DIGESTS must be optional or required, not "$(DIGESTS)")
endif

##@ Images
# Each push records the pushed digest in the lock; commit the lock with the release's bundle/ and catalog/.
.PHONY: docker-push
docker-push: ## Build and push the manager image (docker buildx), record its digest in the lock.
	@meta="$$(mktemp)"; trap 'rm -f "$$meta"' EXIT; \
	docker buildx build --push --metadata-file "$$meta" --build-arg VERSION=$(VERSION) -t $(IMG) . && IMAGE_DIGESTS_LOCK="$(IMAGE_DIGESTS_LOCK)" hack/image-digests.sh record $(IMG) "$$meta"

.PHONY: must-gather-push
must-gather-push: ## Build and push the must-gather image, record its digest in the lock.
	@meta="$$(mktemp)"; trap 'rm -f "$$meta"' EXIT; \
	docker buildx build --push --metadata-file "$$meta" --build-arg VERSION=$(VERSION) -f must-gather/Dockerfile -t $(MUST_GATHER_IMG) . && \
	IMAGE_DIGESTS_LOCK="$(IMAGE_DIGESTS_LOCK)" hack/image-digests.sh record $(MUST_GATHER_IMG) "$$meta"

.PHONY: bundle-push
bundle-push: ## Build and push the bundle image (after the release render), record its digest in the lock.
	@meta="$$(mktemp)"; trap 'rm -f "$$meta"' EXIT; \
	docker buildx build --push --metadata-file "$$meta" -f bundle.Dockerfile -t $(BUNDLE_IMG) . && \
	IMAGE_DIGESTS_LOCK="$(IMAGE_DIGESTS_LOCK)" hack/image-digests.sh record $(BUNDLE_IMG) "$$meta"

.PHONY: image-digests
image-digests: ## Print every image the bundle and catalog reference, resolved as DIGESTS says.
	@$(RESOLVE_IMAGE) $(IMG) $(MUST_GATHER_IMG) $(BUNDLE_IMG)
