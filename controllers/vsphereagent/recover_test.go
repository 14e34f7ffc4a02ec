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

// TestDiscoveryBootNotRecoveredAfterTimeout: a worker reset to boot its installed disk that still waits at
// installing-pending-user-action registrationTimeout after the reset (injected clock) is reported
// DiscoveryBootNotRecovered with one Warning Event, and the recovery phase resets nothing more; before the
// timeout, Ready says the reset happened and the pass comes back when the timeout ends.
func TestDiscoveryBootNotRecoveredAfterTimeout(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	rec := kevents.NewFakeRecorder(8)
	r := &Reconciler{Recorder: events.NewRecorder(rec)}
	r.Opts.Clock = clk

	pool := &afv1.VsphereAgentPool{}
	pool.Spec.ISO.RecoverDiscoveryBoot = true
	pool.Spec.RegistrationTimeout = &metav1.Duration{Duration: 10 * time.Minute}
	va := &afv1.VsphereAgent{}
	va.UID = "va-1"
	va.Status.VM.Name, va.Status.VM.AgentName, va.Status.VM.MachineName = "hc-worker-1", "agent-1", "machine-1"
	va.Status.VM.Phase, va.Status.VM.Reason = afv1.VMPhaseBound, afv1.ReasonInstallingPendingUserAction
	resetAt := metav1.NewTime(now)
	va.Status.VM.DiscoveryBootResetAt = &resetAt
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, true, afv1.ReasonEjected, "ejected", 0)
	a := agents.AgentFrom(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "agent-1"},
		"status":   map[string]any{"debugInfo": map[string]any{"state": agents.StateInstallingPendingUserAction}},
	}})
	s := &vmScope{va: va, pool: pool, agent: &a}

	// The recovery phase makes no call while a reset is recorded (s.vs is nil: a call would panic).
	clk.Step(3 * time.Minute)
	if _, err := r.recoverDiscoveryBoot(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if s.requeue != 7*time.Minute {
		t.Errorf("requeue %s, want the rest of the timeout (7m)", s.requeue)
	}
	r.setReady(s)
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionReady)
	if c == nil || c.Reason != afv1.ReasonInstallingPendingUserAction || !strings.Contains(c.Message, "was reset at") {
		t.Fatalf("Ready before the timeout: %+v", c)
	}

	clk.Step(7 * time.Minute)
	stored := append([]metav1.Condition(nil), va.Status.Conditions...)
	for pass := range 3 {
		s.afterWrite = nil
		if _, err := r.recoverDiscoveryBoot(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		r.setReady(s)
		if pass == 0 { // the write conflicted: nothing announced, the next pass starts from the stored status
			if len(rec.Events) != 0 {
				t.Fatal("an Event was recorded before the condition was written")
			}
			va.Status.Conditions = append([]metav1.Condition(nil), stored...)
			continue
		}
		for _, f := range s.afterWrite {
			f()
		}
	}
	c = conditions.FindCondition(va.Status.Conditions, afv1.ConditionReady)
	if c == nil || c.Reason != afv1.ReasonDiscoveryBootNotRecovered || !strings.Contains(c.Message, "nothing more is tried") {
		t.Fatalf("Ready after the timeout: %+v", c)
	}
	if got := len(rec.Events); got != 1 {
		t.Fatalf("%d Events after two passes past the timeout, want one", got)
	}
	if e := <-rec.Events; !strings.HasPrefix(e, "Warning "+afv1.ReasonDiscoveryBootNotRecovered) {
		t.Errorf("Event %q", e)
	}
	if va.Status.VM.DiscoveryBootResetAt == nil {
		t.Error("the reset record was dropped while the Agent still waits")
	}
}
