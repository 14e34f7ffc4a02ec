package vsphereagent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/planner"
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
// VM (see planner.MaxVMsSlot) leave room for it. Otherwise the VsphereAgent waits in Pending, condition VMCreated
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
	slot := planner.MaxVMsSlot(list.Items, va, limit, admitted)
	if slot.OK {
		admitted[va.UID] = true
	}
	r.admits.mu.Unlock()
	if slot.OK {
		return true, nil
	}
	msg := fmt.Sprintf("limits.maxVMs is %d and %d of the pool's VMs exist or are being created (whatever their phase, until destroyed); "+
		"%d VsphereAgent(s) created before this one wait too: no VM is created until there is room", limit, slot.Holders, slot.Rank)
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionVMCreated); c == nil || c.Reason != afv1.ReasonMaxVMsReached {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonMaxVMsReached, events.ActionCreateVM, "%s", msg)
		s.log.Info("VM creation held by the pool's maxVMs", "maxVMs", limit, "holders", slot.Holders)
	}
	r.setPhase(va, afv1.VMPhasePending, afv1.ReasonMaxVMsReached)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, afv1.ReasonMaxVMsReached, msg, va.Generation)
	s.requeueAfter(limitPoll)
	return false, nil
}
