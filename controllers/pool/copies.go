package pool

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// copyMemory holds, per pool, the copies the last scan found (by instance UUID): a copy is reported
// once per manager process, and the count feeds status.copies. Pools never scanned have no entry. An
// entry is the pool's of that UID: a pool deleted and created again under its name starts over.
type copyMemory struct {
	mu     sync.Mutex
	byPool map[types.NamespacedName]poolCopies
}

type poolCopies struct {
	uid  types.UID
	seen map[string]bool
}

func newCopyMemory() *copyMemory { return &copyMemory{byPool: map[types.NamespacedName]poolCopies{}} }

// observe records found as the pool's copies and returns those the previous scans had not seen.
func (m *copyMemory) observe(pool types.NamespacedName, uid types.UID, found []vsphere.VMInfo) []vsphere.VMInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	var seen map[string]bool
	if e := m.byPool[pool]; e.uid == uid {
		seen = e.seen
	}
	now := map[string]bool{}
	var fresh []vsphere.VMInfo
	for _, vm := range found {
		if !seen[vm.InstanceUUID] && !now[vm.InstanceUUID] {
			fresh = append(fresh, vm)
		}
		now[vm.InstanceUUID] = true
	}
	m.byPool[pool] = poolCopies{uid: uid, seen: now}
	return fresh
}

// count is the number of copies the last scan of the pool found; false when it was never scanned.
func (m *copyMemory) count(pool types.NamespacedName, uid types.UID) (int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byPool[pool]
	if !ok || e.uid != uid {
		return 0, false
	}
	return int32(len(e.seen)), true
}

// ForgetPool drops a deleted pool's copies (a poolmemory Record).
func (m *copyMemory) ForgetPool(pool types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byPool, pool)
}

// HoldsPool reports whether a scan of the pool is remembered.
func (m *copyMemory) HoldsPool(pool types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.byPool[pool]
	return ok
}

// splitCopies separates the VMs carrying the pool's marker into the originals and the copies.
func splitCopies(vms []vsphere.VMInfo, poolUID string) (originals, copies []vsphere.VMInfo) {
	for _, vm := range vms {
		switch {
		case vm.Ownership.PoolUID != poolUID:
		case vm.IsCopy():
			copies = append(copies, vm)
		default:
			originals = append(originals, vm)
		}
	}
	return originals, copies
}

// SummaryCopyFound heads a CopyFound Event; its lines name one copy each (see reportCopies).
const SummaryCopyFound = "%d VM(s) carry this pool's marker but are copies of its VMs (clone, template, restored backup or replica): never destroyed, ejected or counted; remove them or their agent-forge.* extraConfig by hand when not wanted"

// reportCopies remembers the copies a scan found and names each new one in the pool's CopyFound batch
// Event. Not one Eventf per copy: the events.k8s.io recorder folds Events with the same object, reason
// and action within six minutes into the first one's series, so every copy after the first was lost.
func (r *Reconciler) reportCopies(s *poolScope, copies []vsphere.VMInfo) {
	for _, vm := range r.copies.observe(client.ObjectKeyFromObject(s.pool), s.pool.UID, copies) {
		r.Recorder.Batch(s.pool, afv1.ReasonCopyFound, events.ActionCleanUpOrphan, SummaryCopyFound,
			fmt.Sprintf("VM %s (instance UUID %s, %s) copy of %s", vm.Name, vm.InstanceUUID, copyKind(vm), vm.Ownership.OwnerName))
	}
}

func copyKind(vm vsphere.VMInfo) string {
	switch {
	case vm.Template:
		return "template"
	case vm.PoweredOn:
		return "powered on"
	default:
		return "powered off"
	}
}

// copiesAtDeletion lists the pool's VMs once more when the pool goes under Delete: the copies are kept
// and reported (new ones by CopyFound); the count goes into PoolDeleted. Best effort: a vCenter that
// cannot be asked does not hold the deletion (copies are never destroyed either way).
func (r *Reconciler) copiesAtDeletion(ctx context.Context, s *poolScope) string {
	if s.pool.Spec.CleanupPolicy == afv1.CleanupPolicyRetain {
		return ""
	}
	if err := r.connectVSphere(ctx, s); err != nil || s.vs == nil {
		return ""
	}
	vms, err := s.vs.ListPoolVMs(ctx, s.pool.Spec.VSphere.Datacenter, string(s.pool.UID))
	if err != nil {
		s.log.Info("could not list the pool's VMs for copies at deletion", "error", err.Error())
		return ""
	}
	_, copies := splitCopies(vms, string(s.pool.UID))
	r.reportCopies(s, copies)
	if len(copies) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d copy(ies) of its VMs kept (see CopyFound)", len(copies))
}
