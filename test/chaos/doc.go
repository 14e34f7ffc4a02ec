// Package chaos is the crash-point campaign (issue 12): world-driven scenarios run against one API
// server and one vCenter simulator, with the operator killed at a seeded, randomly chosen crash point
// (internal/crashpoint) and restarted as a fresh manager, then checked against the safety invariants
// of SPEC §4–§6. `go test ./test/chaos` runs the short campaign (CHAOS_RUNS, default 20);
// `make test-chaos` runs 200. See docs/reliability.md.
package chaos
