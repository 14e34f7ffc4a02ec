package vsphereagent

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// TestValidationFailureAfterPending: a host whose validations were pending (AgentValidated=Unknown)
// and now fail one that is not about its hardware is announced with a Warning Event, waits the pool's
// registrationTimeout on the injected clock from when the failure was first seen, then is Failed. The
// condition read before this pass's update decides both: read after it (the condition updated in
// place), the Event was lost and the wait counted from the wall clock.
func TestValidationFailureAfterPending(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	rec := kevents.NewFakeRecorder(8)
	r := &Reconciler{Recorder: events.NewRecorder(rec)}
	r.Opts.Clock = clk

	pool := &afv1.VsphereAgentPool{}
	pool.Spec.RegistrationTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	va := &afv1.VsphereAgent{}
	va.Status.VM.Name, va.Status.VM.Phase = "hc-worker-1", afv1.VMPhaseProvisioning
	conditions.SetUnknown(&va.Status.Conditions, afv1.ConditionAgentValidated, afv1.ReasonHostValidationsPending, "pending", 0)
	a := agents.AgentFrom(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "agent-1"},
		"status": map[string]any{"validationsInfo": map[string]any{"network": []any{
			map[string]any{"id": "hostname-unique", "status": "failure", "message": "Hostname hc-worker-1 is not unique"},
		}}},
	}})

	pass := func() *vmScope { return validationsPass(t, r, va, pool, &a) }
	before := append([]metav1.Condition(nil), va.Status.Conditions...)
	s := pass()
	conditions.StampTransitions(before, va.Status.Conditions, clk.Now()) // as the pass's status write does
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentValidated); c == nil || c.Reason != afv1.ReasonHostValidationsFailing {
		t.Fatalf("AgentValidated = %+v, want %s", c, afv1.ReasonHostValidationsFailing)
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], afv1.ReasonHostValidationsFailing) {
		t.Fatalf("events %q, want one %s", got, afv1.ReasonHostValidationsFailing)
	}
	if s.requeue != 10*time.Minute || va.Status.VM.Phase == afv1.VMPhaseFailed {
		t.Fatalf("first failing pass: requeue %s, phase %s; want 10m of grace on the injected clock", s.requeue, va.Status.VM.Phase)
	}

	clk.Step(10 * time.Minute)
	pass()
	if va.Status.VM.Phase != afv1.VMPhaseFailed || va.Status.VM.Reason != afv1.ReasonHostValidationFailed {
		t.Fatalf("after the grace: phase %s/%s, want Failed/%s", va.Status.VM.Phase, va.Status.VM.Reason, afv1.ReasonHostValidationFailed)
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], afv1.ReasonHostValidationFailed) {
		t.Fatalf("events %q, want only %s (the same failure is not announced again)", got, afv1.ReasonHostValidationFailed)
	}
}

// TestValidatedFalseWithoutAList: an Agent whose Validated condition is False while validationsInfo names
// no failed validation is the same verdict for the phase and the condition (Agent.FailsValidations): the
// condition and the Event carry the hub's own message, and the host is Failed after the grace, as a
// non-hardware failure. Before, the phase said HostValidationsFailing while the condition said nothing.
func TestValidatedFalseWithoutAList(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	rec := kevents.NewFakeRecorder(8)
	r := &Reconciler{Recorder: events.NewRecorder(rec)}
	r.Opts.Clock = clk
	pool := &afv1.VsphereAgentPool{}
	pool.Spec.RegistrationTimeout = &metav1.Duration{Duration: 5 * time.Minute}
	va := &afv1.VsphereAgent{}
	va.Status.VM.Name, va.Status.VM.Phase = "hc-worker-2", afv1.VMPhaseProvisioning
	a := agents.AgentFrom(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "agent-2"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Validated", "status": "False", "reason": "ValidationsFailing",
			"message": "The agent's validations are failing: Host is insufficient"}}},
	}})
	if phase, reason := bindingPhase(afv1.VMPhaseProvisioning, a); phase != afv1.VMPhaseProvisioning || reason != afv1.ReasonHostValidationsFailing {
		t.Fatalf("bindingPhase = %s/%s, want Provisioning/%s", phase, reason, afv1.ReasonHostValidationsFailing)
	}
	pass := func() { validationsPass(t, r, va, pool, &a) }
	before := append([]metav1.Condition(nil), va.Status.Conditions...)
	pass()
	conditions.StampTransitions(before, va.Status.Conditions, clk.Now())
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentValidated)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "Host is insufficient") {
		t.Fatalf("AgentValidated = %+v, want False with the hub's message", c)
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], "Host is insufficient") {
		t.Fatalf("events %q, want one Warning with the hub's message", got)
	}
	clk.Step(5 * time.Minute)
	pass()
	if va.Status.VM.Phase != afv1.VMPhaseFailed {
		t.Fatalf("after the grace: phase %s, want Failed", va.Status.VM.Phase)
	}
	if got := drain(rec); len(got) != 1 || !strings.Contains(got[0], "Validated=False: The agent's validations are failing") {
		t.Fatalf("events %q, want the Failed Event naming the condition", got)
	}
}

// validationsPass runs checkValidations once and, as a pass whose status write succeeded, its afterWrite.
func validationsPass(t *testing.T, r *Reconciler, va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool, a *agents.Agent) *vmScope {
	t.Helper()
	s := &vmScope{va: va, pool: pool, agent: a}
	if _, err := r.checkValidations(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	for _, f := range s.afterWrite {
		f()
	}
	return s
}

func drain(rec *kevents.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
