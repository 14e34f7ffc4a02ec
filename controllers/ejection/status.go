package ejection

import (
	"context"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// ejectionGraceOnDelete bounds how long deletion waits for a recorded ejection to finish.
const ejectionGraceOnDelete = 2 * time.Minute

// Summary counts the pool's VMs by ISOEjected reason (nil when no VM reports one).
func Summary(vas []afv1.VsphereAgent) *afv1.ISOEjectionSummary {
	sum := &afv1.ISOEjectionSummary{}
	seen := false
	for i := range vas {
		c := conditions.FindCondition(vas[i].Status.Conditions, afv1.ConditionISOEjected)
		if c == nil {
			continue
		}
		seen = true
		if rec := vas[i].Status.ISOEjection; rec != nil && rec.Armed && c.Reason != afv1.ReasonEjectionFailed {
			sum.Waiting++ // recorded ahead, nothing started: it waits for the installation
			continue
		}
		switch c.Reason {
		case afv1.ReasonEjected:
			sum.Ejected++
		case afv1.ReasonNotAttached:
			sum.NotAttached++
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

// FinishOrClose runs on VsphereAgent deletion. A recorded ejection that still makes progress is
// finished first (bounded by ejectionGraceOnDelete); a refused, failing, stale or unreachable one (pool
// gone: no credentials) is closed with an event so that deletion is never blocked and never silent.
// Returns true while the caller should wait for the ejection.
func (e *Ejector) FinishOrClose(ctx context.Context, p *Pass) (bool, error) {
	va := p.VA
	e.media.Delete(va.UID)
	rec := va.Status.ISOEjection
	if rec == nil {
		return false, nil
	}
	if rec.Armed && !e.started(va.UID) {
		va.Status.ISOEjection = nil // recorded ahead and never started: nothing to finish or close
		return false, nil
	}
	why := ""
	switch {
	case p.Pool == nil:
		why = "its pool is gone (no credentials to reach vCenter)"
	case rec.LastError != "":
		why = "it failed: " + rec.LastError
	case e.Clock.Since(rec.StartedAt.Time) >= ejectionGraceOnDelete:
		why = "it did not finish within " + ejectionGraceOnDelete.String()
	default:
		if ok, msg := e.Guard.Supported(ctx); !ok {
			why = msg
			break
		}
		if err := e.stepEjection(ctx, p); err != nil {
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
	e.Recorder.Eventf(va, nil, "Warning", afv1.ReasonISOEjectionClosed, events.ActionEjectISO, "VsphereAgent is being deleted; the ejection of %s from VM %s was closed unfinished because %s",
		rec.ISOPath, va.Status.VM.Name, why)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, "closed on deletion: "+why, va.Generation)
	va.Status.ISOEjection = nil
	return false, nil
}

// ReportOn sets the pool's CRDsCurrent condition: whether the served CRDs keep the ejection recovery
// record (nothing before the first check, or without a guard).
func (g *Guard) ReportOn(p *afv1.VsphereAgentPool) {
	if g == nil {
		return
	}
	checked, ok, reason, msg := g.Condition()
	if !checked {
		return
	}
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionCRDsCurrent, ok, reason, msg, p.Generation)
}
