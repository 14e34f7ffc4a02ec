package pool

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/exclusion"
)

// otherManagerTopic is the EventLimiter topic of a pool's stand-down Event.
func otherManagerTopic(p *afv1.VsphereAgentPool) string {
	return client.ObjectKeyFromObject(p).String() + "/other-manager"
}

// standDown is the pass of a pool while another agent-forge manager is active, or cannot be ruled out
// because the Leases are unreadable (internal/exclusion): no finalizer, no VsphereAgent, no vCenter
// call; only the pool's conditions say why (OtherManagerActive True, or Unknown while unreadable), and
// a Warning Event. The watcher requeues every pool when the gate opens again.
func (r *Reconciler) standDown(ctx context.Context, s *poolScope, before *afv1.VsphereAgentPoolStatus, gate exclusion.Gate) (ctrl.Result, error) {
	p := s.pool
	now := r.Opts.Clock.Now()
	reason, msg := exclusion.StandDownReason(gate), gate.Message
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionOtherManagerActive, true, reason, msg, p.Generation)
	if gate.Unreadable {
		meta.FindStatusCondition(p.Status.Conditions, afv1.ConditionOtherManagerActive).Status = metav1.ConditionUnknown
	}
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionReady, false, reason, msg, p.Generation)
	if r.refusalEvents.Allow(otherManagerTopic(p), reason, now) {
		r.Recorder.Eventf(p, nil, "Warning", reason, events.ActionStandDown, "%s", msg)
	}
	s.log.V(1).Info("another agent-forge manager is active; taking no action", "message", msg)
	conditions.StampTransitions(before.Conditions, p.Status.Conditions, now)
	requeue := ctrl.Result{RequeueAfter: r.Exclusion.RecheckAfter()}
	if conditions.SameAsStored(before, &p.Status) {
		return requeue, nil
	}
	if err := r.writeStatus(ctx, p); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: config.StatusConflictRequeue}, nil
		}
		return ctrl.Result{}, err
	}
	return requeue, nil
}

// noOtherManager turns OtherManagerActive False once the other manager is gone (only on pools that saw
// one: the condition is not added to every pool).
func (r *Reconciler) noOtherManager(p *afv1.VsphereAgentPool) {
	if conditions.FindCondition(p.Status.Conditions, afv1.ConditionOtherManagerActive) == nil {
		return
	}
	r.refusalEvents.Clear(otherManagerTopic(p))
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionOtherManagerActive, false, afv1.ReasonNoOtherManager,
		"no other agent-forge manager holds a live Lease; this manager acts", p.Generation)
}
