package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Invariants checked at the moment they could break, not by sampling:
//   - every VM destroy, when the simulator receives Destroy_Task (vcsim.OnVMCall; the call waits for the
//     check): the VM carries our marker, and no Machine (deleting or not) is bound to its Agent;
//   - every VM create, when the simulator receives CreateVM_Task: its VsphereAgent exists and is not
//     being deleted, and the pool's VMs of live VsphereAgents plus this one stay within demand + spares;
//   - every VsphereAgent creation, from the API server's watch events of the run's namespace: live
//     VsphereAgents stay within demand + spares.
//
// Demand is the NodePool's replicas, which only the scenario changes (run.scale records each change);
// the bound is the highest demand of the last demandWindow (the operator acts on what it saw up to a
// debounce earlier), plus the pool's spec.standby (the standby scenario's warm VMs); spares is 0.
const (
	demandWindow = 5 * time.Second
	spares       = 0
)

// moments receives the simulator's VM calls for the whole campaign and checks them against the run in
// progress (none between runs: the harness's own cleanup destroys are not the operator's).
type moments struct {
	mu       sync.Mutex
	run      *run
	inflight sync.WaitGroup
}

// set makes r the run in progress (nil: none); it returns once no check of the previous run is running.
func (m *moments) set(r *run) {
	m.mu.Lock()
	m.run = r
	m.mu.Unlock()
	m.inflight.Wait()
}

func (m *moments) onVMCall(call vcsim.VMCall) {
	m.mu.Lock()
	r := m.run
	if r != nil {
		m.inflight.Add(1)
	}
	m.mu.Unlock()
	if r == nil {
		return
	}
	defer m.inflight.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	switch call.Method {
	case vcsim.MethodDestroyVM:
		r.checkCopyCall(call)
		r.checkDestroy(ctx, call)
	case vcsim.MethodReconfigVM:
		r.checkCopyCall(call)
	case vcsim.MethodCreateVM:
		r.checkCreate(ctx, call)
	}
}

// demandAt is the highest NodePool replicas set within demandWindow before t.
func (r *run) demandAt(t time.Time) int {
	r.demandMu.Lock()
	defer r.demandMu.Unlock()
	best := 0
	for i, d := range r.demand {
		next := time.Time{}
		if i+1 < len(r.demand) {
			next = r.demand[i+1].at
		}
		inForce := !d.at.After(t) && (next.IsZero() || next.After(t.Add(-demandWindow)))
		if inForce && d.n > best {
			best = d.n
		}
	}
	return best
}

func (r *run) recordDemand(n int) {
	r.demandMu.Lock()
	r.demand = append(r.demand, demandStep{at: time.Now(), n: n})
	r.demandMu.Unlock()
}

func (r *run) checkDestroy(ctx context.Context, call vcsim.VMCall) {
	r.momentMu.Lock()
	r.destroysChecked++
	r.momentMu.Unlock()
	if call.OwnerUID == "" {
		r.momentViolation("VM %s (%s) without our marker received Destroy_Task", call.Name, call.Ref)
		return
	}
	if r.poolUID == "" || !strings.EqualFold(call.PoolUID, r.poolUID) {
		return
	}
	machines, err := r.w.Observe(ctx, r.s.NodePool)
	if err != nil {
		r.momentViolation("Destroy_Task of VM %s: the Machines could not be read at the call: %v", call.Name, err)
		return
	}
	agent := r.s.Namespace + "/" + world.AgentNameFor(call.BIOSUUID)
	for _, mv := range machines {
		if mv.Agent == agent {
			r.momentViolation("VM %s received Destroy_Task while Machine %s (phase %s, deleting %t) is bound to its Agent %s",
				call.Name, mv.Name, mv.Phase, mv.Deleting, agent)
		}
	}
}

func (r *run) checkCreate(ctx context.Context, call vcsim.VMCall) {
	if r.poolUID == "" || !strings.EqualFold(call.PoolUID, r.poolUID) {
		return
	}
	now := time.Now()
	var vas afv1.VsphereAgentList
	if err := r.c.h.Client.List(ctx, &vas, client.InNamespace(r.s.Namespace)); err != nil {
		r.momentViolation("CreateVM_Task of %s: the VsphereAgents could not be read at the call: %v", call.Name, err)
		return
	}
	live := map[string]bool{}
	for _, va := range vas.Items {
		if va.DeletionTimestamp.IsZero() {
			live[strings.ToLower(string(va.UID))] = true
		}
	}
	if !live[strings.ToLower(call.OwnerUID)] {
		r.momentViolation("CreateVM_Task of %s for VsphereAgent UID %s, which does not exist or is being deleted", call.Name, call.OwnerUID)
	}
	vms, err := r.vmsOfPool()
	if err != nil {
		r.momentViolation("CreateVM_Task of %s: the pool's VMs could not be read at the call: %v", call.Name, err)
		return
	}
	n := 1
	owners := make([]string, 0, len(vms))
	for _, vm := range vms {
		owners = append(owners, strings.ToLower(vm.Ownership.OwnerUID))
		if live[strings.ToLower(vm.Ownership.OwnerUID)] && !strings.EqualFold(vm.Ownership.OwnerUID, call.OwnerUID) {
			n++
		}
	}
	if r.domains != nil {
		r.checkCreateDomain(call, vas.Items, live, owners)
	}
	r.momentMu.Lock()
	r.createsChecked++
	r.peakVMs = max(r.peakVMs, n)
	r.momentMu.Unlock()
	r.checkLimitCreate(call.Name, len(vms))
	if bound := r.demandAt(now) + spares + r.standby; n > bound {
		r.momentViolation("over-provisioning: CreateVM_Task of %s makes %d VMs of live VsphereAgents, demand + spares is %d", call.Name, n, bound)
	}
}

// watchVsphereAgents follows the run's VsphereAgents through the API server's watch until ctx ends and
// checks every creation against demand + spares.
func (r *run) watchVsphereAgents(ctx context.Context, wc client.WithWatch) error {
	w, err := wc.Watch(ctx, &afv1.VsphereAgentList{}, client.InNamespace(r.s.Namespace))
	if err != nil {
		return err
	}
	go func() {
		defer w.Stop()
		live := map[string]bool{}
		for {
			var ev watch.Event
			var ok bool
			select {
			case <-ctx.Done():
				return
			case ev, ok = <-w.ResultChan():
			}
			if !ok {
				return // the run's context ended (the watch is re-opened by nobody: one run)
			}
			va, isVA := ev.Object.(*afv1.VsphereAgent)
			if !isVA {
				continue
			}
			uid := string(va.UID)
			added := ev.Type == watch.Added && !live[uid] && va.DeletionTimestamp.IsZero()
			switch {
			case ev.Type == watch.Deleted || !va.DeletionTimestamp.IsZero():
				delete(live, uid)
			case ev.Type == watch.Added || ev.Type == watch.Modified:
				live[uid] = true
			}
			if !added {
				continue
			}
			r.momentMu.Lock()
			r.peakVAs = max(r.peakVAs, len(live))
			r.momentMu.Unlock()
			if bound := r.demandAt(time.Now()) + spares + r.standby; len(live) > bound {
				r.momentViolation("over-provisioning: VsphereAgent %s created with %d live VsphereAgents, demand + spares is %d", va.Name, len(live), bound)
			}
		}
	}()
	return nil
}

// momentViolation records a violation from a callback goroutine (the run's own list is not locked).
func (r *run) momentViolation(format string, args ...any) {
	r.momentMu.Lock()
	defer r.momentMu.Unlock()
	r.momentViolations = append(r.momentViolations, fmt.Sprintf("%6.2fs %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...)))
}

// takeMoments moves the moment checks' results into the run (call it after moments.set(nil): no check
// of this run runs any more).
func (r *run) takeMoments() {
	r.momentMu.Lock()
	vs := r.momentViolations
	r.momentViolations = nil
	summary := fmt.Sprintf("checked at the moment: %d destroys, %d creates; peak %d VMs of live VsphereAgents, %d live VsphereAgents",
		r.destroysChecked, r.createsChecked, r.peakVMs, r.peakVAs)
	r.momentMu.Unlock()
	r.momentSummary = summary
	r.note("%s", summary)
	for _, v := range vs {
		r.violate("%s", v)
	}
}

type demandStep struct {
	at time.Time
	n  int
}
