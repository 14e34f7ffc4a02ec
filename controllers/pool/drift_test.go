package pool

import (
	"strings"
	"testing"

	kevents "k8s.io/client-go/tools/events"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// TestTemplateDriftStatus: the pool's status follows the plan's drift (count, names, the most common
// difference first, unrecorded workers apart), a template change is announced once with what changed,
// and a pass that ended before planning leaves the status as it was.
func TestTemplateDriftStatus(t *testing.T) {
	rec := kevents.NewFakeRecorder(8)
	r := &Reconciler{Recorder: events.NewRecorder(rec)}
	p := &afv1.VsphereAgentPool{}
	p.Namespace, p.Name = "drift-ns", "drift"
	t.Cleanup(func() { metrics.PoolDriftedWorkers.DeleteLabelValues(p.Namespace, p.Name) })
	p.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 2, MemoryMiB: 8192, DiskGiB: 100}
	s := &poolScope{pool: p}
	pass := func(planned bool) { // each pass computes the pool's current template afresh
		s.templates = poolspec.NewTemplates(p)
		r.setTemplateDrift(s, planned)
	}

	pass(true)
	if c := conditions.FindCondition(p.Status.Conditions, afv1.ConditionTemplateCurrent); c == nil || c.Reason != afv1.ReasonTemplateCurrent {
		t.Fatalf("TemplateCurrent = %+v", c)
	}
	if len(rec.Events) != 0 {
		t.Fatal("an Event before any change")
	}

	p.Spec.Template.MemoryMiB = 12288
	s.plan = planner.Plan(planner.Snapshot{VMs: []planner.VM{
		{VMObservation: planner.VMObservation{Name: "va-1", Phase: afv1.VMPhaseBound, MachineRef: true}, TemplateDrift: []string{"memoryMiB 8192 -> 12288"}},
		{VMObservation: planner.VMObservation{Name: "va-2", Phase: afv1.VMPhaseBound, MachineRef: true}, TemplateDrift: []string{"memoryMiB 8192 -> 12288", "numCPUs 1 -> 2"}},
		{VMObservation: planner.VMObservation{Name: "va-3", Phase: afv1.VMPhaseBound, MachineRef: true}, TemplateUnrecorded: true},
	}})
	pass(true)
	d := p.Status.TemplateDrift
	if d.BoundWorkers != 2 || d.Unrecorded != 1 || strings.Join(d.Workers, ",") != "va-1,va-2" || d.Diff != "memoryMiB 8192 -> 12288, numCPUs 1 -> 2" {
		t.Fatalf("templateDrift = %+v", d)
	}
	if d.Template == nil || d.Template.Shape["memoryMiB"] != "12288" {
		t.Fatalf("current template %+v", d.Template)
	}
	c := conditions.FindCondition(p.Status.Conditions, afv1.ConditionTemplateCurrent)
	if c == nil || c.Reason != afv1.ReasonTemplateDrift || !strings.Contains(c.Message, "2 bound worker(s)") || !strings.Contains(c.Message, "va-1, va-2") {
		t.Fatalf("TemplateCurrent = %+v", c)
	}
	if got := len(rec.Events); got != 1 {
		t.Fatalf("%d Events after the change, want 1", got)
	}
	if e := <-rec.Events; !strings.Contains(e, afv1.ReasonTemplateChanged) || !strings.Contains(e, "memoryMiB 8192 -> 12288") {
		t.Fatalf("Event %q", e)
	}
	pass(true)
	if len(rec.Events) != 0 {
		t.Fatal("the same template announced again")
	}

	p.Spec.Template.MemoryMiB = 16384
	before := p.Status.TemplateDrift.DeepCopy()
	pass(false)
	if p.Status.TemplateDrift.Template.Hash != before.Template.Hash || len(rec.Events) != 0 {
		t.Fatal("a pass that did not plan changed the drift status or announced a change")
	}
}
