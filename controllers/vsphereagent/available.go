package vsphereagent

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
)

// availableHolds remembers, per VsphereAgent, when a pass first found its VM ready to become Available
// (lost on restart: the new process holds it once more).
type availableHolds struct{ m sync.Map }

// holdAvailable keeps a VM that just became Available from writing that for availableHold (on
// BatchClock): a scale-up's VM is usually bound by the provider within moments, and then goes
// Provisioning -> Bound in one status write instead of two. While held, the pass writes nothing (its
// whole status stays as stored: the Agent's registration and preparation are written with the phase)
// and comes back when the hold is over; a standby VM nobody binds is written Available then. The
// provider's binding wakes the pass at once (the Agent's watch), so a hold never delays Bound.
// Meanwhile every reader counts the VM as in flight (phase Provisioning: planner.Lifecycle, the
// failure domains' in-flight counts), never as missing, so no further VM is created for it; its Agent,
// already labelled for the pool, is not foreign supply either. A negative interval writes at once.
func (r *Reconciler) holdAvailable(s *vmScope, before *afv1.VsphereAgentStatus) {
	va := s.va
	key := types.NamespacedName{Namespace: va.Namespace, Name: va.Name}
	if va.Status.VM.Phase != afv1.VMPhaseAvailable || before.VM.Phase != afv1.VMPhaseProvisioning || r.Opts.StatusBatchInterval < 0 {
		r.holds.m.Delete(key)
		return
	}
	now := r.Opts.BatchClock.Now()
	since, _ := r.holds.m.LoadOrStore(key, now)
	left := since.(time.Time).Add(r.availableHold(s.pool)).Sub(now)
	if left <= 0 {
		r.holds.m.Delete(key) // it stood: written now
		return
	}
	va.Status = *before.DeepCopy()
	s.requeueAfter(left)
}

// availableHold is how long a prepared VM's Available write waits: StatusBatchInterval, or up to
// AvailableHoldMax (default 30 s) while AgentMachines of its pool wait (pool.status.waitingAgentMachines): then the
// provider is about to bind an Agent of the pool, and under load it does so tens of seconds after the
// preparation, past a hold of StatusBatchInterval alone (figures: docs/performance.md, "Two of the three taken").
// Not with limits.maxConcurrentProvisioning: a held VM counts as provisioning, and a longer hold would
// slow the creations the limit lets through.
func (r *Reconciler) availableHold(pool *afv1.VsphereAgentPool) time.Duration {
	hold := r.Opts.StatusBatchInterval
	if pool != nil && pool.Status.WaitingAgentMachines > 0 && (pool.Spec.Limits == nil || pool.Spec.Limits.MaxConcurrentProvisioning == nil) {
		hold = max(hold, r.Opts.AvailableHoldMax)
	}
	return hold
}

// recordPreparedBeforeBinding sets AgentPrepared for a VM whose Agent this operator prepared in a pass
// whose write was held (holdAvailable) and the provider bound before it was written: prepareAgent
// leaves bound Agents alone, and the condition would otherwise never be written.
func recordPreparedBeforeBinding(va *afv1.VsphereAgent, a *agents.Agent) {
	if conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentPrepared) != nil || a.Labels[afv1.LabelVsphereAgent] != va.Name {
		return
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentPrepared, true, afv1.ReasonAgentPrepared,
		fmt.Sprintf("Agent %s carries the pool's labels, hostname %s and role %s (approved: %t)", a.Name, a.Hostname, a.Role, a.Approved), va.Generation)
}

// forget drops a deleted VsphereAgent's hold.
func (h *availableHolds) forget(key types.NamespacedName) { h.m.Delete(key) }
