package pool

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// setStandby writes status.standby and StandbyReady from the plan's view of the warm standby, with a
// Warning Event when the limits or the failure domains start capping it. StandbyReady is written once
// spec.standby was set (a pool that never asked for a standby shows no such condition).
func (r *Reconciler) setStandby(s *poolScope) {
	p := s.pool
	st := &p.Status
	sb := s.plan.Standby
	if sb.Desired != int(p.Spec.Standby) {
		return // the pass ended before planning: nothing new is known about the standby
	}
	metrics.PoolStandbyDesired.WithLabelValues(p.Namespace, p.Name).Set(float64(sb.Desired))
	metrics.PoolStandbyReady.WithLabelValues(p.Namespace, p.Name).Set(float64(sb.Ready))
	prev := conditions.FindCondition(st.Conditions, afv1.ConditionStandbyReady)
	gen := p.Generation
	if sb.Desired == 0 {
		st.Standby = nil
		if prev != nil {
			conditions.SetCondition(&st.Conditions, afv1.ConditionStandbyReady, true, afv1.ReasonStandbyDisabled, "spec.standby is 0: no VM is kept in standby", gen)
		}
		return
	}
	st.Standby = &afv1.StandbyStatus{Desired: int32(sb.Desired), Ready: int32(sb.Ready)}
	ready := fmt.Sprintf("%d of %d standby Agent(s) ready", sb.Ready, sb.Desired)
	switch {
	case sb.Ready >= sb.Desired:
		conditions.SetCondition(&st.Conditions, afv1.ConditionStandbyReady, true, afv1.ReasonStandbyFull, ready, gen)
	case sb.Limit != "":
		msg := fmt.Sprintf("%s; %s leaves no room for the %d VM(s) the standby lacks (standby VMs count toward limits.maxVMs)", ready, sb.Limit, sb.Short)
		if prev == nil || prev.Reason != afv1.ReasonStandbyLimited {
			r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonStandbyLimited, events.ActionRequestVM, "%s", msg)
		}
		conditions.SetCondition(&st.Conditions, afv1.ConditionStandbyReady, false, afv1.ReasonStandbyLimited, msg, gen)
	default:
		msg := fmt.Sprintf("%s; the rest are on their way (created, booting into discovery or awaiting validation)", ready)
		switch {
		case p.Spec.Paused:
			msg = ready + "; spec.paused is true: the standby is not refilled"
		case s.plan.Block != "":
			msg = fmt.Sprintf("%s; creation stopped (%s): the standby is not refilled", ready, s.plan.Block)
		}
		conditions.SetCondition(&st.Conditions, afv1.ConditionStandbyReady, false, afv1.ReasonStandbyFilling, msg, gen)
	}
}

// boundLatency measures agent_forge_demand_to_bound_seconds: per pool, when each AgentMachine was first
// observed waiting, until a pass sees its agentRef set. An AgentMachine the provider serves before any
// pass sees it waiting (a standby Agent taken at once) gives no sample: the histogram over-states the
// latency a standby gives, never under-states it.
type boundLatency struct {
	mu    sync.Mutex
	first map[types.NamespacedName]map[types.UID]time.Time
}

func newBoundLatency() *boundLatency {
	return &boundLatency{first: map[types.NamespacedName]map[types.UID]time.Time{}}
}

// observe records the pass's AgentMachines (waiting: those that wait for an Agent now) at now.
func (l *boundLatency) observe(pool types.NamespacedName, ams []agents.AgentMachine, waiting sets.Set[types.UID], now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := l.first[pool]
	if seen == nil {
		seen = map[types.UID]time.Time{}
		l.first[pool] = seen
	}
	present := make(sets.Set[types.UID], len(ams))
	for _, am := range ams {
		present.Insert(am.UID)
		at, tracked := seen[am.UID]
		switch {
		case am.Deleting:
			delete(seen, am.UID)
		case tracked && am.AgentRef != "":
			metrics.DemandToBound.WithLabelValues(pool.Namespace, pool.Name).Observe(now.Sub(at).Seconds())
			delete(seen, am.UID)
		case !tracked && waiting.Has(am.UID):
			seen[am.UID] = now
		}
	}
	for uid := range seen {
		if !present.Has(uid) {
			delete(seen, uid) // gone before it was served: no sample
		}
	}
}

// ForgetPool drops a deleted pool's waiting AgentMachines (a poolmemory Record).
func (l *boundLatency) ForgetPool(pool types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.first, pool)
}

// HoldsPool reports whether the pool has an entry, even an emptied one.
func (l *boundLatency) HoldsPool(pool types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.first[pool]
	return ok
}
