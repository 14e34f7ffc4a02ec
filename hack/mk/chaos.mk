# The crash-point campaign (issue 12, docs/reliability.md): world-driven scenarios with the operator
# killed at seeded, randomly chosen crash points and restarted fresh, checked against the safety
# invariants. `go test ./...` (so `make test`) runs its short version (CHAOS_RUNS default 20).
# Reproduce a failed run with the command it prints: CHAOS_SEED=<seed> CHAOS_ONLY=<run> make test-chaos.

CHAOS_RUNS ?= 200
CHAOS_SEED ?=
CHAOS_ONLY ?=
CHAOS_LOG := $(LOCALBIN)/chaos/chaos.log

.PHONY: test-chaos
test-chaos: envtest-assets ## Crash-point campaign: CHAOS_RUNS (200) runs, each killing the operator at a crash point; CHAOS_SEED/CHAOS_ONLY reproduce a run.
	@mkdir -p $(dir $(CHAOS_LOG)); status=0; \
	CHAOS_RUNS=$(CHAOS_RUNS) CHAOS_SEED=$(CHAOS_SEED) CHAOS_ONLY=$(CHAOS_ONLY) \
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" go test -race -count=1 -timeout 60m -v -run '^TestChaosCampaign$$' ./test/chaos \
		> $(CHAOS_LOG) 2>&1 || status=$$?; \
	grep -v '^chaos: [0-9]' $(CHAOS_LOG) | grep -v '^\(=== RUN\|--- PASS\|PASS$$\|ok \)' | tail -n 80; \
	echo "(full log: $(CHAOS_LOG))"; \
	grep '^chaos: [0-9]' $(CHAOS_LOG) | tail -n 1; \
	exit $$status
