package vsphereagent

import (
	"context"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// reportImage sets the VsphereAgent's ImageCurrent condition against the pool's cached image (the pool
// decides the replacement; this shows each VM's standing, e.g. a bound worker on an older image).
func (r *Reconciler) reportImage(_ context.Context, s *vmScope) (bool, error) {
	va := s.va
	state := planner.Lifecycle(planner.VMObservation{
		Name: va.Name, Phase: va.Status.VM.Phase, Reason: va.Status.VM.Reason, Deleting: !va.DeletionTimestamp.IsZero(),
		MachineRef: va.Status.VM.MachineName != "", AgentBound: s.agent != nil && s.agent.IsBound(),
	})
	v := planner.DecideImage(planner.ImageCheck{
		Enabled: poolspec.ReplaceOutdated(s.pool), Current: poolspec.Image(s.pool), Booted: poolspec.BootedImage(va), State: state,
		StaticIPLease: poolspec.HoldsLease(va),
	})
	if v.Reason != afv1.ReasonCurrentImageUnknown {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionImageCurrent, v.Current, v.Reason, v.Message, va.Generation)
	}
	return true, nil
}
