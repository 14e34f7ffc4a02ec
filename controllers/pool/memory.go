package pool

import (
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
)

// initMemory makes the pool controller's per-pool records and registers each with r.Memory (made here
// when the wiring handed none), so that one Forget drops all a deleted pool left behind. A field added to
// the Reconciler that remembers something per pool registers here: TestEveryPoolRecordIsForgotten fails
// on a Reconciler field holding a map that is neither registered nor listed as keyed by something else.
func (r *Reconciler) initMemory() {
	if r.expectations == nil {
		r.expectations = newExpectations(r.Opts.Clock)
	}
	r.debounce = newDebouncer(r.Opts.Clock, r.Opts.DebounceIdle, r.Opts.DebounceMax)
	r.orphanScans = newLastRun()
	r.copies = newCopyMemory()
	r.latency = newBoundLatency()
	r.statusWrites = newDebouncer(r.Opts.BatchClock, r.Opts.StatusBatchInterval, r.Opts.StatusBatchMax)
	r.own = poolmemory.NewOwnWrites[*afv1.VsphereAgentPool]()
	if r.Memory == nil {
		r.Memory = poolmemory.NewRegistry()
	}
	m := r.Memory
	m.Register("pool/expectations", r.expectations)
	m.Register("pool/debounce", r.debounce)
	m.Register("pool/orphanScans", r.orphanScans)
	m.Register("pool/copies", r.copies)
	m.Register("pool/latency", r.latency)
	m.Register("pool/statusWrites", r.statusWrites)
	m.Register("pool/refusalEvents", &r.refusalEvents)
	m.Register("pool/domains", &r.domains)
	m.Register("pool/modules", &r.modules)
	m.Register("pool/own", poolmemory.Funcs{
		Forget: func(pool types.NamespacedName) { r.own.Forget(pool) },
		Holds:  r.own.Holds,
	})
	m.Register("pool/preflight", poolmemory.Funcs{ // the placement verdicts (checks, built on first use)
		Forget: func(pool types.NamespacedName) { r.preflight().ForgetPool(pool) },
		Holds:  func(pool types.NamespacedName) bool { return r.preflight().HoldsPool(pool) },
	})
	m.Register("pool/staticIP", poolmemory.Funcs{ // the lease passes' first-pass marks (built on first use)
		Forget: func(pool types.NamespacedName) { r.leases().ForgetPool(pool) },
		Holds:  func(pool types.NamespacedName) bool { return r.leases().HoldsPool(pool) },
	})
	if iso, ok := r.ISO.(poolmemory.Record); ok {
		m.Register("pool/iso", iso)
	}
	if r.Opts.DestroyedHosts != nil {
		m.Register("destroyedHosts", r.Opts.DestroyedHosts)
	}
}
