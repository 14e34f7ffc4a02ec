package pool

import (
	"context"
	"fmt"
	"sync"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/shared"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// copyMemory holds, per pool UID, the copies the last scan found (by instance UUID): a copy is reported
// once per manager process, and the count feeds status.copies. Pools never scanned have no entry.
type copyMemory struct {
	mu     sync.Mutex
	byPool map[string]map[string]bool
}

func newCopyMemory() *copyMemory { return &copyMemory{byPool: map[string]map[string]bool{}} }

// observe records found as pool's copies and returns those the previous scans had not seen.
func (m *copyMemory) observe(pool string, found []vsphere.VMInfo) []vsphere.VMInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen, now := m.byPool[pool], map[string]bool{}
	var fresh []vsphere.VMInfo
	for _, vm := range found {
		if !seen[vm.InstanceUUID] && !now[vm.InstanceUUID] {
			fresh = append(fresh, vm)
		}
		now[vm.InstanceUUID] = true
	}
	m.byPool[pool] = now
	return fresh
}

// count is the number of copies the last scan of pool found; false when it was never scanned.
func (m *copyMemory) count(pool string) (int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen, ok := m.byPool[pool]
	return int32(len(seen)), ok
}

func (m *copyMemory) forget(pool string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byPool, pool)
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
	for _, vm := range r.copies.observe(string(s.pool.UID), copies) {
		r.Recorder.Batch(s.pool, afv1.ReasonCopyFound, shared.ActionCleanUpOrphan, SummaryCopyFound,
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
