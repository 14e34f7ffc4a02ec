package vsphereagent

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// createdByPool reports whether pool created va: the pool sets itself as va's controller owner when it
// creates it, with its UID, so a hand-applied object (or one left from a deleted pool of the same name)
// does not pass.
func createdByPool(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) bool {
	owner := metav1.GetControllerOf(va)
	return owner != nil && owner.Kind == "VsphereAgentPool" && owner.APIVersion == afv1.GroupVersion.String() &&
		owner.Name == pool.Name && owner.UID == pool.UID
}

// refuseForeignVsphereAgent records, once per refusal, why a VsphereAgent not created by its pool is
// ignored. No finalizer is added, no VM created; deleting the object is all it takes to clear it.
func (r *Reconciler) refuseForeignVsphereAgent(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) {
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionReady); c == nil || c.Reason != afv1.ReasonNotCreatedByPool {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonNotCreatedByPool, events.ActionCreateVM,
			"ignored: VsphereAgents are created by their pool (controller owner %s); apply a VsphereAgentPool instead", pool.Name)
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonNotCreatedByPool,
		"ignored: not created by VsphereAgentPool "+pool.Name+" (no controller owner reference to it); no VM is created for it", va.Generation)
}
