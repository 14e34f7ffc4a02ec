# The crash-point campaign (issues 12 and 24, docs/reliability.md): world-driven scenarios with the
# operator killed at seeded, randomly chosen crash points and restarted fresh, checked against the
# safety invariants. `go test ./...` (so `make test`) runs its short in-process version (CHAOS_RUNS
# default 20, CHAOS_MODE inprocess). `make test-chaos` runs the real manager binary and SIGKILLs it at
# the points (CHAOS_MODE=sigkill) while the manager reaches the API server through the fault proxy
# (CHAOS_API_FAULTS=1: lost write responses, 429/503 bursts, cut watches, slow answers), and fails when a
# crash point has fewer than CHAOS_MIN_KILLS executed kills or a fault kind fewer than CHAOS_MIN_API_FAULTS. Reproduce a failed run with the command it prints: CHAOS_SEED=<seed> CHAOS_ONLY=<run> make test-chaos.

CHAOS_RUNS ?= 200
CHAOS_SEED ?=
CHAOS_ONLY ?=
CHAOS_MODE ?= sigkill
# Executed kills every crash point needs; empty: the campaign's own default, 3 once it has runs enough
# for 3 per point (the default 200 runs), else 1 (CHAOS_RUNS=30 cannot give 19 points 3 kills each).
CHAOS_MIN_KILLS ?=
# Executed API faults the campaign needs: N per kind (lost-response, 429, 503, watch-cut, slow), or
# total=N and <kind>=N separated by commas.
CHAOS_MIN_API_FAULTS ?= 3
CHAOS_API_FAULTS ?= 1
CHAOS_LOG := $(LOCALBIN)/chaos/chaos.log
CHAOS_LOG_DIR := $(LOCALBIN)/chaos/managers

.PHONY: test-chaos
test-chaos: envtest-assets ## Crash-point campaign: CHAOS_RUNS (200) runs, SIGKILLing the real manager binary at crash points (CHAOS_MODE=sigkill) behind the API fault proxy (CHAOS_API_FAULTS=1), every point >= CHAOS_MIN_KILLS executed kills (3 with enough runs, else 1), every API fault kind >= CHAOS_MIN_API_FAULTS (3); CHAOS_SEED/CHAOS_ONLY reproduce a run.
	@mkdir -p $(dir $(CHAOS_LOG)); rm -rf $(CHAOS_LOG_DIR); status=0; \
	CHAOS_RUNS=$(CHAOS_RUNS) CHAOS_SEED=$(CHAOS_SEED) CHAOS_ONLY=$(CHAOS_ONLY) CHAOS_MODE=$(CHAOS_MODE) \
	CHAOS_MIN_KILLS=$(CHAOS_MIN_KILLS) CHAOS_MIN_API_FAULTS=$(CHAOS_MIN_API_FAULTS) CHAOS_API_FAULTS=$(CHAOS_API_FAULTS) CHAOS_LOG_DIR=$(abspath $(CHAOS_LOG_DIR)) \
	KUBEBUILDER_ASSETS="$$(hack/envtest-assets.sh)" go test -race -count=1 -timeout 150m -v -run '^TestChaosCampaign$$' ./test/chaos \
		> $(CHAOS_LOG) 2>&1 || status=$$?; \
	grep -v '^chaos: [0-9]' $(CHAOS_LOG) | grep -v '^\(=== RUN\|--- PASS\|PASS$$\|ok \)' | tail -n 80; \
	echo "(full log: $(CHAOS_LOG))"; \
	grep '^chaos: [0-9]' $(CHAOS_LOG) | tail -n 1; \
	exit $$status
