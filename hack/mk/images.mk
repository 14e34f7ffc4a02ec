# Images by digest (issue #26, "disconnected for real"): a mirrored cluster pulls through an
# ImageDigestMirrorSet, which only redirects pulls by digest, so a bundle that claims
# features.operators.openshift.io/disconnected "true" must name every image by @sha256:.
# hack/image-digests.sh resolves each image the bundle and catalog reference: an image given by digest is kept,
# otherwise the lock IMAGE_DIGESTS_LOCK (written by `make release` below, from the digests it pushed) or,
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
# hack/imagebuild builds the four images from the Dockerfiles without a container engine, for every platform
# it lists (linux/amd64, linux/arm64) as one multi-arch index each: base pulled by reference with a deadline,
# the builder stage's go build cross-compiled (CGO_ENABLED=0), COPY layers, labels, user and entrypoint.
# The catalog's `opm serve --cache-only` pre-build step needs an engine and is skipped: opm builds its cache
# when the catalog pod starts.
IMAGE_RELEASE ?= 1
IMAGES_LAYOUT ?= $(LOCALBIN)/images
IMAGEBUILD = go run ./hack/imagebuild -build-arg VERSION=$(VERSION) -build-arg RELEASE=$(IMAGE_RELEASE) $(IMAGEBUILD_FLAGS)
ALL_IMAGES = -image manager=$(IMG) -image must-gather=$(MUST_GATHER_IMG) -image bundle=$(BUNDLE_IMG) -image catalog=$(CATALOG_IMG)

.PHONY: images
images: ## Build manager, must-gather, bundle and catalog (linux/amd64+arm64) into the OCI layout IMAGES_LAYOUT, or push them with PUSH=1 (tags from IMAGE_TAG_BASE); no container engine.
	$(IMAGEBUILD) $(if $(filter 1,$(PUSH)),-push,-oci-layout $(IMAGES_LAYOUT)) $(ALL_IMAGES)

# The one real push (docs/upgrade.md#releasing). Credentials: the docker config (authn.DefaultKeychain, e.g.
# after `podman login quay.io` or `skopeo login`). Each push records its index digest in the lock, so the
# release renders name every image by digest; commit the lock with bundle/ and catalog/.
.PHONY: release
release: ## Push manager + must-gather, release-render bundle/ by digest, push the bundle image, release-render the catalog, push the catalog image.
	$(IMAGEBUILD) -push -lock "$(IMAGE_DIGESTS_LOCK)" -image manager=$(IMG) -image must-gather=$(MUST_GATHER_IMG)
	$(MAKE) --no-print-directory bundle-release
	$(IMAGEBUILD) -push -lock "$(IMAGE_DIGESTS_LOCK)" -image bundle=$(BUNDLE_IMG)
	$(MAKE) --no-print-directory catalog-release
	$(IMAGEBUILD) -push -lock "$(IMAGE_DIGESTS_LOCK)" -image catalog=$(CATALOG_IMG)
	$(MAKE) --no-print-directory bundle-validate catalog-validate

.PHONY: image-digests
image-digests: ## Print every image the bundle and catalog reference, resolved as DIGESTS says.
	@$(RESOLVE_IMAGE) $(IMG) $(MUST_GATHER_IMG) $(BUNDLE_IMG)
