package controllers

import (
	"context"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/shared"
)

// ejectionGraceOnDelete bounds how long deletion waits for a recorded ejection to finish.
const ejectionGraceOnDelete = 2 * time.Minute

// ejectionSummary counts the pool's VMs by ISOEjected reason (nil when no VM reports one).
func ejectionSummary(vas []afv1.VsphereAgent) *afv1.ISOEjectionSummary {
	sum := &afv1.ISOEjectionSummary{}
	seen := false
	for i := range vas {
		c := shared.FindCondition(vas[i].Status.Conditions, afv1.ConditionISOEjected)
		if c == nil {
			continue
		}
		seen = true
		switch c.Reason {
		case afv1.ReasonEjected:
			sum.Ejected++
		case afv1.ReasonEjectionInProgress:
			sum.InProgress++
		case afv1.ReasonEjectionFailed:
			sum.Failed++
		case afv1.ReasonWaitingForInstallation:
			sum.Waiting++
		}
	}
	if !seen {
		return nil
	}
	return sum
}

// setCRDCondition reports on the pool whether the served CRDs keep the ejection recovery record.
func (r *PoolReconciler) setCRDCondition(p *afv1.VsphereAgentPool) {
	if r.Guard == nil {
		return
	}
	checked, ok, reason, msg := r.Guard.Condition()
	if !checked {
		return
	}
	shared.SetCondition(&p.Status.Conditions, afv1.ConditionCRDsCurrent, ok, reason, msg, p.Generation)
}

// finishOrCloseEjection runs on VsphereAgent deletion. A recorded ejection that still makes progress is
// finished first (bounded by ejectionGraceOnDelete); a refused, failing, stale or unreachable one (pool
// gone: no credentials) is closed with an event so that deletion is never blocked and never silent.
// Returns true while the caller should wait for the ejection.
func (r *VsphereAgentReconciler) finishOrCloseEjection(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	rec := va.Status.ISOEjection
	if rec == nil {
		return false, nil
	}
	why := ""
	switch {
	case s.pool == nil:
		why = "its pool is gone (no credentials to reach vCenter)"
	case rec.LastError != "":
		why = "it failed: " + rec.LastError
	case r.Opts.Clock.Since(rec.StartedAt.Time) >= ejectionGraceOnDelete:
		why = "it did not finish within " + ejectionGraceOnDelete.String()
	default:
		if ok, msg := r.Guard.Supported(ctx); !ok {
			why = msg
			break
		}
		if err := r.stepEjection(ctx, s); err != nil {
			return false, err
		}
		if rec = va.Status.ISOEjection; rec == nil {
			return false, nil
		}
		if rec.LastError == "" {
			return true, nil
		}
		why = "it failed: " + rec.LastError
	}
	r.Recorder.Eventf(va, "Warning", "ISOEjectionClosed", "VsphereAgent is being deleted; the ejection of %s from VM %s was closed unfinished because %s",
		rec.ISOPath, va.Status.VM.Name, why)
	shared.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, "closed on deletion: "+why, va.Generation)
	va.Status.ISOEjection = nil
	return false, nil
}
