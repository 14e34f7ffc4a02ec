// Package e2e runs the demo's loop as a short end-to-end test: envtest + the real Cluster API v1.14.2
// core controllers (their own process: they make the Machines and pick which go on scale-down) +
// vCenter simulator + ISO server + world driver (HyperShift, the Agent CAPI provider, assisted-service)
// + the operator's controllers (in-process, so -race covers them), driven by the shipped sample pool,
// NodePool 0 → 2 → 3 → 1, with the demo's invariants (see hack/demo).
package e2e
