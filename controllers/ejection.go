package controllers

import (
	"context"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// reconcileEjection will disconnect and eject the discovery ISO once the Agent reports Installed=True.
// Until the operator ejects, the condition says so honestly.
func (r *VsphereAgentReconciler) reconcileEjection(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	if c := findCondition(va.Status.Conditions, afv1.ConditionISOEjected); c != nil && c.Reason == afv1.ReasonEjected {
		return true, nil
	}
	setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonWaitingForInstallation, "waiting for the Agent to report Installed=True", va.Generation)
	return true, nil
}
