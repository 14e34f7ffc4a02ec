package planner

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/upstream"
)

// Slot is MaxVMsSlot's verdict: OK when the VsphereAgent may create its VM; Holders counts the VMs that
// take the limit's slots first, Rank how many waiting VsphereAgents come before it.
type Slot struct {
	OK            bool
	Holders, Rank int
}

// MaxVMsSlot is spec.limits.maxVMs at the moment a VM is created: it decides whether va may create its
// VM under limit, from the pool's VsphereAgents (vas, from the cache; va itself is added when missing).
// A VsphereAgent holds a slot while it may have a VM (MayHaveVM) and either its status records one, it
// is being deleted (its VM's destroy may be held), or this process admitted it (admitted; pruned here
// once its status shows a VM or it is gone). The others wait for a VM and are admitted in one
// deterministic order, creation time then name, only as many as the slots left: every pass computes the
// same order, so two VsphereAgents racing for the last slot never both get it, and a newer one (which
// the cache may not show yet) comes after va. Upstream VsphereAgents not adopted yet are not the pool's
// (see the pool's count) and skipped.
func MaxVMsSlot(vas []afv1.VsphereAgent, va *afv1.VsphereAgent, limit int, admitted map[types.UID]bool) Slot {
	seen := map[types.UID]bool{}
	var waiting []*afv1.VsphereAgent
	holders := 0
	consider := func(o *afv1.VsphereAgent) {
		if seen[o.UID] || upstream.Pending(o) {
			return
		}
		seen[o.UID] = true
		if !MayHaveVM(o.Status.VM.Phase, o.Status.VM.Reason) {
			return
		}
		switch {
		case o.Status.VM.InstanceUUID != "", !o.DeletionTimestamp.IsZero():
			holders++
		case admitted[o.UID]:
			holders++
			return // admitted: creating its VM, not waiting
		default:
			waiting = append(waiting, o)
		}
	}
	for i := range vas {
		consider(&vas[i])
	}
	consider(va)
	for uid := range admitted {
		stillCreating := false
		for _, w := range vas {
			if w.UID == uid && w.Status.VM.InstanceUUID == "" && w.DeletionTimestamp.IsZero() && MayHaveVM(w.Status.VM.Phase, w.Status.VM.Reason) {
				stillCreating = true
			}
		}
		if !stillCreating && uid != va.UID {
			delete(admitted, uid) // its status shows the VM (counted above), or it failed or is gone
		}
	}
	if admitted[va.UID] {
		return Slot{OK: true, Holders: holders}
	}
	sort.SliceStable(waiting, func(i, j int) bool {
		a, b := waiting[i], waiting[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	rank := 0
	for rank < len(waiting) && waiting[rank].UID != va.UID {
		rank++
	}
	return Slot{OK: holders+rank < limit, Holders: holders, Rank: rank}
}
