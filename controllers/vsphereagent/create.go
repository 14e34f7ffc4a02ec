package vsphereagent

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/upstream"
)

// limitPoll is how often a VsphereAgent held by maxVMs looks for room again: the destroy or failure of
// another VsphereAgent's VM, which makes room, does not start its pass.
const limitPoll = 10 * time.Second

// admissions remembers the VsphereAgents this process let create a VM whose instance UUID no status
// shows yet (being created, or created while the cache still lags): they hold a slot, so two passes
// racing for the last one never both pass. The zero value is ready.
type admissions struct {
	mu sync.Mutex
	// byPool maps a pool's key to the UIDs admitted in it.
	byPool map[string]map[types.UID]bool
}

// admitVM is the hard limit at the moment a VM is created, whoever made the VsphereAgent (an object
// anyone allowed to create VsphereAgents can write, controller owner reference included): with
// spec.limits.maxVMs set, the VM is created only when the pool's VsphereAgents that have or may have a
// VM (see slotFor) leave room for it. Otherwise the VsphereAgent waits in Pending, condition VMCreated
// False with reason MaxVMsReached and an Event, and looks again every limitPoll.
func (r *Reconciler) admitVM(ctx context.Context, s *vmScope) (bool, error) {
	va, pool := s.va, s.pool
	if pool.Spec.Limits == nil || pool.Spec.Limits.MaxVMs == nil {
		return true, nil
	}
	limit := int(*pool.Spec.Limits.MaxVMs)
	var list afv1.VsphereAgentList
	if err := r.List(ctx, &list, client.InNamespace(va.Namespace), client.MatchingFields{watch.IndexPoolRef: pool.Name}); err != nil {
		return false, err
	}
	key := client.ObjectKeyFromObject(pool).String()
	r.admits.mu.Lock()
	if r.admits.byPool == nil {
		r.admits.byPool = map[string]map[types.UID]bool{}
	}
	admitted := r.admits.byPool[key]
	if admitted == nil {
		admitted = map[types.UID]bool{}
		r.admits.byPool[key] = admitted
	}
	slot := slotFor(list.Items, va, limit, admitted)
	if slot.ok {
		admitted[va.UID] = true
	}
	r.admits.mu.Unlock()
	if slot.ok {
		return true, nil
	}
	msg := fmt.Sprintf("limits.maxVMs is %d and %d of the pool's VMs exist or are being created (whatever their phase, until destroyed); "+
		"%d VsphereAgent(s) created before this one wait too: no VM is created until there is room", limit, slot.holders, slot.rank)
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionVMCreated); c == nil || c.Reason != afv1.ReasonMaxVMsReached {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonMaxVMsReached, events.ActionCreateVM, "%s", msg)
		s.log.Info("VM creation held by the pool's maxVMs", "maxVMs", limit, "holders", slot.holders)
	}
	r.setPhase(va, afv1.VMPhasePending, afv1.ReasonMaxVMsReached)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, afv1.ReasonMaxVMsReached, msg, va.Generation)
	s.requeueAfter(limitPoll)
	return false, nil
}

// slot is admitVM's verdict: ok when va may create its VM; holders counts the VMs that take the limit's
// slots first, rank how many waiting VsphereAgents come before va.
type slot struct {
	ok            bool
	holders, rank int
}

// slotFor decides whether va may create its VM under limit, from the pool's VsphereAgents (vas, from the
// cache; va itself is added when missing). A VsphereAgent holds a slot while it may have a VM
// (planner.MayHaveVM) and either its status records one, it is being deleted (its VM's destroy may be
// held), or this process admitted it (admitted; pruned here once its status shows a VM or it is gone).
// The others wait for a VM and are admitted in one deterministic order, creation time then name, only
// as many as the slots left: every pass computes the same order, so two VsphereAgents racing for the
// last slot never both get it, and a newer one (which the cache may not show yet) comes after va.
// Upstream VsphereAgents not adopted yet are not the pool's (see the pool's count) and skipped.
func slotFor(vas []afv1.VsphereAgent, va *afv1.VsphereAgent, limit int, admitted map[types.UID]bool) slot {
	seen := map[types.UID]bool{}
	var waiting []*afv1.VsphereAgent
	holders := 0
	consider := func(o *afv1.VsphereAgent) {
		if seen[o.UID] || upstream.Pending(o) {
			return
		}
		seen[o.UID] = true
		if !planner.MayHaveVM(o.Status.VM.Phase, o.Status.VM.Reason) {
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
			if w.UID == uid && w.Status.VM.InstanceUUID == "" && w.DeletionTimestamp.IsZero() && planner.MayHaveVM(w.Status.VM.Phase, w.Status.VM.Reason) {
				stillCreating = true
			}
		}
		if !stillCreating && uid != va.UID {
			delete(admitted, uid) // its status shows the VM (counted above), or it failed or is gone
		}
	}
	if admitted[va.UID] {
		return slot{ok: true, holders: holders}
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
	return slot{ok: holders+rank < limit, holders: holders, rank: rank}
}
