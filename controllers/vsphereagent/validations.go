package vsphereagent

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/hostreqs"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// describeValidations names each failing validation with its category and the hub's own message.
func describeValidations(vs []agents.Validation) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s (%s): %s", v.ID, v.Category, v.Message)
	}
	return strings.Join(parts, "; ")
}

// validatedMessage is the Agent's Validated condition message, or a placeholder when it has none.
func validatedMessage(a *agents.Agent) string {
	if c, ok := agents.FindCondition(a.Conditions, "Validated"); ok && c.Message != "" {
		return c.Message
	}
	return "(no message)"
}

// checkValidations reports assisted-service's verdict on the host (condition AgentValidated, a Warning
// Event when it starts failing or fails differently) and gives up on a host that cannot pass: Failed/
// HostValidationFailed at once when a hardware validation fails (every VM of the template would fail
// it the same way; the pool stops creating that shape), else once the failure has lasted the pool's
// registrationTimeout. A Failed VM is not supply and counts towards the registration breaker, which
// bounds how many the pool replaces. A bound host is only reported: it backs a Machine, whose
// installation waits while the hub calls the host insufficient (a duplicate hostname, disk.EnableUUID
// off); setReady makes it Ready=False. A host leaving a cluster is the provider's.
func (r *Reconciler) checkValidations(_ context.Context, s *vmScope) (bool, error) {
	a, va := s.agent, s.va
	if a == nil || a.IsUnbinding() || va.Status.VM.Phase == afv1.VMPhaseReleased || (a.IsBound() && a.IsInstalled()) {
		return true, nil
	}
	// The condition as this pass found it: SetCondition below updates the stored one in place.
	var prev metav1.Condition
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentValidated); c != nil {
		prev = *c
	}
	failing, fails := a.FailsValidations()
	if !fails {
		if agents.IsTrue(a.Conditions, "Validated") {
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentValidated, true, afv1.ReasonHostValidationsPassing,
				"the host passes assisted-service's validations", va.Generation)
		} else {
			conditions.SetUnknown(&va.Status.Conditions, afv1.ConditionAgentValidated, afv1.ReasonHostValidationsPending,
				"assisted-service has not reported a verdict on the host yet", va.Generation)
		}
		return true, nil
	}
	what := describeValidations(failing)
	if len(failing) == 0 { // only the Validated condition says so: its message is the explanation
		what = "Validated=False: " + validatedMessage(a)
	}
	msg := "the host fails assisted-service's validations: " + what
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentValidated, false, afv1.ReasonHostValidationsFailing, msg, va.Generation)
	if prev.Status != metav1.ConditionFalse || prev.Message != msg {
		s.afterWrite = append(s.afterWrite, func() {
			r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonHostValidationsFailing, events.ActionAwaitAgent, "VM %s: %s", va.Status.VM.Name, msg)
		})
	}
	if a.IsBound() {
		return true, nil // reported, never failed: its Machine is the user's or CAPI's to replace
	}
	hardware := false
	for _, v := range failing {
		hardware = hardware || hostreqs.IsHardwareValidation(v.ID)
	}
	if !hardware {
		grace := poolspec.RegistrationTimeout(s.pool)
		since := r.Opts.Clock.Now()
		if prev.Status == metav1.ConditionFalse {
			since = prev.LastTransitionTime.Time
		}
		if left := since.Add(grace).Sub(r.Opts.Clock.Now()); left > 0 {
			s.requeueAfter(left)
			return true, nil
		}
	}
	r.setPhase(va, afv1.VMPhaseFailed, afv1.ReasonHostValidationFailed)
	name := va.Status.VM.Name
	s.afterWrite = append(s.afterWrite, func() {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonHostValidationFailed, events.ActionAwaitAgent,
			"VM %s is Failed for its host's validations (%s); the pool replaces it within the registration breaker's budget", name, what)
	})
	return false, nil
}
