package pool

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// snapshot gathers what the pass observed into the planner's input. It copies facts and decides nothing:
// which VMs are surplus, abandoned or outdated, what blocks creation and when is planner.Plan's business.
func (r *Reconciler) snapshot(s *poolScope) planner.Snapshot {
	poolKey := client.ObjectKeyFromObject(s.pool).String()
	present := sets.New[string]()
	for _, va := range s.vas {
		present.Insert(va.Name)
	}
	pendingCreates, deleting := r.expectations.pending(poolKey, present)
	snap := planner.Snapshot{
		Now: r.Opts.Clock.Now(), Waiting: s.waiting, PendingCreates: pendingCreates, Paused: s.pool.Spec.Paused,
		RemoveSurplus: s.pool.Spec.CleanupPolicy != afv1.CleanupPolicyRetain,
		Blocks: planner.Blocks{
			Preflight: s.preflightBlock, Hardware: s.hardwareRefusal, StaticIP: s.staticIP.Block(), NoSession: s.vs == nil,
			NoISO: iso.PoolISOPath(s.pool) == "",
		},
		CurrentImage: currentImage(s), ReplaceOutdated: poolspec.ReplaceOutdated(s.pool),
		RegistrationFailureThreshold: r.Opts.RegistrationFailureThreshold, FailedRetention: r.Opts.FailedRetention,
		Breaker: breakerOf(s.pool.Status.RegistrationBreaker), Generation: s.pool.Generation,
		BreakerBackoff: planner.Backoff{Base: r.Opts.RegistrationBackoff, Ceiling: r.Opts.RegistrationBackoffMax},
		Debounce:       r.debounce.settings(), Burst: r.debounce.window(poolKey), Standby: int(s.pool.Spec.Standby),
	}
	snap.MaxVMs, snap.MaxConcurrentProvisioning = poolspec.Limits(s.pool)
	for _, a := range s.matching {
		if !s.ourAgents.Has(a.Name) && a.Labels[afv1.LabelPool] == "" && a.IsSuitable() {
			snap.ForeignAvailable++
		}
	}
	readyAgentOfVM := sets.New[string]()
	for _, a := range s.matching {
		if name := a.Labels[afv1.LabelVsphereAgent]; name != "" && s.ourAgents.Has(a.Name) && a.IsSuitable() {
			readyAgentOfVM.Insert(name)
		}
	}
	s.templates = poolspec.NewTemplates(s.pool)
	for i, o := range observeVMs(s, deleting) {
		va := &s.vas[i]
		snap.VMs = append(snap.VMs, planner.VM{VMObservation: o, Domain: va.Spec.FailureDomain,
			HasVM: va.Status.VM.InstanceUUID != "", Image: poolspec.BootedImage(va), StaticIPLease: poolspec.HoldsLease(va),
			AgentReady: readyAgentOfVM.Has(va.Name), TemplateDrift: s.templates.Drift(va),
			TemplateUnrecorded: va.Status.VM.Template == nil && va.Status.VM.InstanceUUID != ""})
	}
	for _, v := range s.domains {
		snap.Domains = append(snap.Domains, v.Domain)
	}
	return snap
}

// observeVMs maps each of the pool's VsphereAgents (s.vas, same order) to what the planner decides on.
// deleting names the ones the pool deleted that its cache still lists. The Agents' own state is fresher
// than the VsphereAgents' status: whether a VM's Agent is already bound is read from the Agent.
func observeVMs(s *poolScope, deleting sets.Set[string]) []planner.VMObservation {
	boundAgentOfVM := map[string]bool{}
	for _, a := range s.matching {
		if name := a.Labels[afv1.LabelVsphereAgent]; name != "" {
			boundAgentOfVM[name] = a.IsBound()
		}
	}
	out := make([]planner.VMObservation, 0, len(s.vas))
	for i := range s.vas {
		va := &s.vas[i]
		o := planner.VMObservation{
			Name: va.Name, Phase: va.Status.VM.Phase, Reason: va.Status.VM.Reason,
			Deleting: !va.DeletionTimestamp.IsZero(), DeleteIssued: deleting.Has(va.Name),
			MachineRef: va.Status.VM.MachineName != "", AgentBound: boundAgentOfVM[va.Name],
			CreatedAt: va.CreationTimestamp.Time,
		}
		if t := va.Status.VM.LastTransitionTime; t != nil {
			o.PhaseChangedAt = t.Time
		}
		if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentValidated); c != nil {
			if c.Status == "True" {
				o.RegisteredAt = c.LastTransitionTime.Time
			}
		} else if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentRegistered); c != nil && c.Status == "True" {
			o.RegisteredAt = c.LastTransitionTime.Time
		}
		out = append(out, o)
	}
	return out
}
