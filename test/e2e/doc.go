// Package e2e runs the demo's loop as a short end-to-end test: envtest + vCenter simulator + ISO server +
// world driver + the operator's controllers (in-process, so -race covers them), driven by the shipped
// sample pool, NodePool 0 → 2 → 3 → 1, with the demo's invariants (see hack/demo).
package e2e
