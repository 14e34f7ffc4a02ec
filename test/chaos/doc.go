// Package chaos is the crash-point campaign (issues 12 and 24): world-driven scenarios run against one
// API server and one vCenter simulator, with the operator killed at a seeded, randomly chosen crash
// point (internal/crashpoint) and restarted fresh, then checked against the safety invariants of SPEC
// §4–§6, some at the moment they could break (moment_test.go). The operator is the in-process manager
// (CHAOS_MODE=inprocess: a kill is a cooperative stop) or the real binary (CHAOS_MODE=sigkill: SIGKILL
// by PID while it waits at the point, announced over AGENT_FORGE_CRASHPOINT_SOCKET); CHAOS_API_FAULTS=1
// puts an API-server fault proxy (test/sim/apifaults) in front of it. Executed kills are counted and
// every point must reach CHAOS_MIN_KILLS; executed API faults must reach CHAOS_MIN_API_FAULTS. Every run
// also makes copies of a pool VM and a foreign VM with the pool's marker (copies_test.go), never to be
// destroyed or reconfigured; max-vms and standby runs check limits.maxVMs and spec.standby. `go test ./test/chaos` runs the short in-process campaign
// (CHAOS_RUNS, default 20); `make test-chaos` runs 200 with SIGKILL. See
// docs/reliability.md.
package chaos
