# Monitoring: alert rules checked and unit-tested with the real promtool, built from source like the other tools.
# Included by the Makefile; reuses LOCALBIN.

PROMETHEUS_VERSION := v0.316.0
# The Go module v0.316.0 is Prometheus 3.16.0.
PROMTOOL_RELEASE := 3.16.0
PROMTOOL := $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
PROM_RULES := config/prometheus/rules.yaml
PROM_RULE_TESTS := $(wildcard config/prometheus/tests/*.yaml)
# Upstream's alerts rewritten for our series (docs/migration.md): not deployed, tested as upstream-rules.yaml.
PROM_UPSTREAM_RULES := config/prometheus/upstream/replacement-rules.yaml

TEST_DEPS += rules-test

##@ Monitoring
.PHONY: rules-test
rules-test: $(PROMTOOL) ## promtool check rules + test rules on the PrometheusRule (every alert: firing and quiet cases).
	@# promtool reads plain rule files: take the PrometheusRule's spec (groups:) out of the custom resource.
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	sed -n '/^spec:$$/,$$p' $(PROM_RULES) | tail -n +2 | sed 's/^  //' > "$$tmp/rules.yaml"; \
	grep -q '^groups:' "$$tmp/rules.yaml" || { echo "rules-test: no spec.groups in $(PROM_RULES)"; exit 1; }; \
	sed -n '/^spec:$$/,$$p' $(PROM_UPSTREAM_RULES) | tail -n +2 | sed 's/^  //' > "$$tmp/upstream-rules.yaml"; \
	grep -q '^groups:' "$$tmp/upstream-rules.yaml" || { echo "rules-test: no spec.groups in $(PROM_UPSTREAM_RULES)"; exit 1; }; \
	cp $(PROM_RULE_TESTS) "$$tmp/"; \
	$(PROMTOOL) check rules "$$tmp/rules.yaml" "$$tmp/upstream-rules.yaml"; \
	cd "$$tmp" && $(PROMTOOL) test rules $(notdir $(PROM_RULE_TESTS))

# Without service discovery plugins (remove_all_sd): promtool only checks and tests rules here. Cold build ~1-2 min.
$(PROMTOOL):
	cd hack/tools/promtool && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -tags remove_all_sd \
		-ldflags "-X github.com/prometheus/common/version.Version=$(PROMTOOL_RELEASE)" \
		-o $@ github.com/prometheus/prometheus/cmd/promtool

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool into bin/.
