# Static analysis (issue #27): golangci-lint v2 with .golangci.yml, built from source by hack/golangci-lint.sh
# into bin/golangci-lint-<version>/ (cold build 250-360 s of CPU, 3-6 min on 2 cores, then cached).
# `make lint` = gofmt check + go vet (the rules in the Makefile) + golangci-lint; `make test` runs it.
# Lints the main module only (hack/peers, hack/crdgen and hack/tools/* are modules of their own).
# Included by the Makefile.

GOLANGCI_LINT_VERSION := v2.15.0
# golangci-lint's analysis cache lives with the other cached tools under bin/. A cold run takes about two
# minutes of CPU (1-2 min on 2 cores) once `go vet` has filled the Go build cache; a warm one, seconds.
GOLANGCI_LINT_CACHE ?= $(LOCALBIN)/golangci-lint-cache

TEST_DEPS += lint

.PHONY: golangci-lint
golangci-lint: ## Run golangci-lint (.golangci.yml) on the main module; part of `make lint`.
	@bin="$$(GOLANGCI_LINT_VERSION=$(GOLANGCI_LINT_VERSION) hack/golangci-lint.sh)"; \
	GOLANGCI_LINT_CACHE="$(GOLANGCI_LINT_CACHE)" "$$bin" run ./...
