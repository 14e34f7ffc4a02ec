package vsphereagent

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
)

// registerMemory registers the VsphereAgent controller's per-pool records with r.Memory (made here when
// the wiring handed none). Its other records are keyed by VsphereAgent (own writes, VM checks, refusals,
// Available holds, NoVMYet) and are forgotten with their VsphereAgent, which a pool's deletion waits for:
// TestEveryPoolRecordIsRegistered lists them, and fails on a new field holding a map listed nowhere.
func (r *Reconciler) registerMemory() {
	if r.Memory == nil {
		r.Memory = poolmemory.NewRegistry()
	}
	r.Memory.Register("vsphereagent/admits", &r.admits)
}

// ForgetPool drops the admissions of a deleted pool (a poolmemory Record).
func (a *admissions) ForgetPool(pool types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.byPool, pool.String())
}

// HoldsPool reports whether the pool has an entry, even an emptied one.
func (a *admissions) HoldsPool(pool types.NamespacedName) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.byPool[pool.String()]
	return ok
}
