package pool

import (
	"fmt"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// maxDriftWorkers bounds status.templateDrift.workers; maxDriftDifferences how many differences the
// condition and status name.
const (
	maxDriftWorkers     = 20
	maxDriftDifferences = 4
)

// setTemplateDrift reports what the plan found of the bound workers made from an earlier template
// (status.templateDrift, condition TemplateCurrent, the drifted-workers metric) and announces a change of
// the pool's template with an Event naming what changed. Nothing is done to a bound worker: CAPI replaces
// them when the NodePool rolls (docs/drift.md); the plan replaces the unbound ones.
func (r *Reconciler) setTemplateDrift(s *poolScope, planned bool) {
	p := s.pool
	st := &p.Status
	if !planned {
		return // the pass ended before planning: nothing new is known about the VMs
	}
	cur := s.templates.Record(poolspec.Domains(p)[0].Name) // Domains lists at least the pool's own placement
	var prev *afv1.TemplateRecord
	if st.TemplateDrift != nil {
		prev = st.TemplateDrift.Template
	}
	if prev != nil && prev.Hash != cur.Hash {
		changed := poolspec.ShortDiff(poolspec.ShapeDiff(prev.Shape, cur.Shape), 8)
		r.Recorder.Eventf(p, nil, "Normal", afv1.ReasonTemplateChanged, events.ActionReplaceVM,
			"the pool's template changed (%s): new VMs get it, unbound VMs of the old one are replaced, bound workers are kept and reported in status.templateDrift", changed)
	}
	d := s.plan.Drift
	metrics.PoolDriftedWorkers.WithLabelValues(p.Namespace, p.Name).Set(float64(len(d.Workers)))
	drift := &afv1.TemplateDriftStatus{Template: cur, BoundWorkers: int32(len(d.Workers)), Unrecorded: int32(d.Unrecorded)}
	drift.Workers = d.Workers[:min(len(d.Workers), maxDriftWorkers)]
	drift.Diff = poolspec.ShortDiff(d.Differences(), maxDriftDifferences)
	st.TemplateDrift = drift
	gen := p.Generation
	if len(d.Workers) == 0 {
		msg := "every bound worker whose template is recorded was made from the current template"
		if d.Unrecorded > 0 {
			msg += fmt.Sprintf("; %d bound worker(s) were made before VMs recorded their template (or adopted): not compared", d.Unrecorded)
		}
		conditions.SetCondition(&st.Conditions, afv1.ConditionTemplateCurrent, true, afv1.ReasonTemplateCurrent, msg, gen)
		return
	}
	names := strings.Join(drift.Workers, ", ")
	if len(d.Workers) > len(drift.Workers) {
		names += fmt.Sprintf(" and %d more", len(d.Workers)-len(drift.Workers))
	}
	msg := fmt.Sprintf("%d bound worker(s) were made from an earlier template (%s): %s. They are kept as they are; "+
		"delete their Machines one by one so that CAPI replaces them with VMs of the current template (docs/drift.md)",
		len(d.Workers), drift.Diff, names)
	conditions.SetCondition(&st.Conditions, afv1.ConditionTemplateCurrent, false, afv1.ReasonTemplateDrift, msg, gen)
}
