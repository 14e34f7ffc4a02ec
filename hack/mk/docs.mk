# Generated documentation: docs/api.md, the API reference, rendered from the Go types in api/ by crd-ref-docs.
# Included by the Makefile; reuses LOCALBIN.

CRD_REF_DOCS_VERSION := v0.3.0
CRD_REF_DOCS := $(LOCALBIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
CRD_REF_DOCS_FLAGS := --source-path=./api --config=hack/crd-ref-docs/config.yaml --renderer=markdown --log-level=ERROR

TEST_DEPS += api-docs-verify

##@ Documentation
.PHONY: api-docs
api-docs: $(CRD_REF_DOCS) ## Generate docs/api.md from the Go types in api/.
	$(CRD_REF_DOCS) $(CRD_REF_DOCS_FLAGS) --output-path=docs/api.md

.PHONY: api-docs-verify
api-docs-verify: $(CRD_REF_DOCS) ## Fail if docs/api.md differs from what the Go types in api/ generate.
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	$(CRD_REF_DOCS) $(CRD_REF_DOCS_FLAGS) --output-path="$$tmp/api.md" >/dev/null; \
	if ! diff -u docs/api.md "$$tmp/api.md"; then echo "api-docs-verify: docs/api.md is stale; run 'make api-docs' and commit."; exit 1; fi; \
	echo "api-docs-verify: docs/api.md matches the Go types"

# Cold build ~20 s of CPU (crd-ref-docs and its few dependencies).
$(CRD_REF_DOCS):
	tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	GOBIN="$$tmp" GOFLAGS= go install github.com/elastic/crd-ref-docs@$(CRD_REF_DOCS_VERSION) && mv "$$tmp/crd-ref-docs" $@
