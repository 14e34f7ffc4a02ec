package vsphereagent

import (
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// TestBindingPhase is the VsphereAgent's phase decision from its registered Agent (trackBinding), and
// what the pool makes of the result (planner.Lifecycle): an Agent leaving a cluster (unbinding,
// reclaiming, awaiting a reboot into discovery) never makes its VM Available (free capacity), and one
// awaiting a reboot into discovery gets its own reason. Destroying a Released VM is the pool's, behind
// fresh reads of the Agent and the Machine (release, reconcileDelete; spec "An Agent left at
// UnbindingPendingUserAction").
func TestBindingPhase(t *testing.T) {
	cond := func(typ, status, reason string) agents.Condition {
		return agents.Condition{Type: typ, Status: status, Reason: reason}
	}
	ready := []agents.Condition{cond("Connected", "True", "AgentIsConnected"), cond("Validated", "True", "ValidationsPassing")}
	free := append([]agents.Condition{cond("Bound", "False", "Unbound")}, ready...)
	bound := append([]agents.Condition{cond("Bound", "True", "Bound"), cond("Installed", "True", "InstallationCompleted")}, ready...)
	// assisted-service at unbinding-pending-user-action (agent_controller.go bound() and validated()).
	pending := []agents.Condition{
		cond("Bound", "False", "UnbindingPendingUserAction"), cond("Validated", "False", "Unbinding"),
		cond("Connected", "True", "AgentIsConnected"), cond("Installed", "True", "InstallationCompleted"),
	}
	unbinding := []agents.Condition{cond("Bound", "False", "Unbinding"), cond("Validated", "False", "Unbinding"), cond("Connected", "True", "AgentIsConnected")}
	agent := func(state string, conds []agents.Condition, labels map[string]string) agents.Agent {
		return agents.Agent{Name: "a", Approved: true, Hostname: "vm-1", State: state, Conditions: conds, Labels: labels}
	}
	reserved := map[string]string{agents.LabelAgentMachineRef: "np-abcde"}

	tests := []struct {
		name       string
		prev       afv1.VMPhase
		agent      agents.Agent
		wantPhase  afv1.VMPhase
		wantReason string
	}{
		{"prepared, free: Available", afv1.VMPhaseProvisioning, agent("known-unbound", free, nil), afv1.VMPhaseAvailable, afv1.ReasonAgentPrepared},
		{"prepared, its host failing validations: in flight, no supply", afv1.VMPhaseProvisioning, agent("insufficient-unbound",
			[]agents.Condition{cond("Connected", "True", "AgentIsConnected"), cond("Validated", "False", "ValidationsFailing")}, nil),
			afv1.VMPhaseProvisioning, afv1.ReasonHostValidationsFailing},
		{"was Available, its host now fails validations: no longer supply", afv1.VMPhaseAvailable, agent("insufficient-unbound",
			[]agents.Condition{cond("Connected", "True", "AgentIsConnected"), cond("Validated", "False", "ValidationsFailing")}, nil),
			afv1.VMPhaseProvisioning, afv1.ReasonHostValidationsFailing},
		{"validations still running (Validated=Unknown): Available", afv1.VMPhaseProvisioning, agent("discovering-unbound",
			[]agents.Condition{cond("Connected", "True", "AgentIsConnected"), cond("Validated", "Unknown", "ValidationsUnknown")}, nil),
			afv1.VMPhaseAvailable, afv1.ReasonAgentPrepared},
		{"reserved (label only): Bound", afv1.VMPhaseAvailable, agent("known-unbound", free, reserved), afv1.VMPhaseBound, afv1.ReasonAgentBound},
		{"bound and installed: Bound", afv1.VMPhaseBound, agent("added-to-existing-cluster", bound, reserved), afv1.VMPhaseBound, afv1.ReasonAgentBound},
		{"unbound after use, back to known-unbound: Released", afv1.VMPhaseBound, agent("known-unbound", free, nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"stays Released once released", afv1.VMPhaseReleased, agent("known-unbound", free, nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"UnbindingPendingUserAction after Bound", afv1.VMPhaseBound, agent("unbinding-pending-user-action", pending, nil), afv1.VMPhaseReleased, afv1.ReasonUnbindingPendingUserAction},
		{"UnbindingPendingUserAction by the Bound condition alone (no debugInfo)", afv1.VMPhaseBound, agent("", pending, nil), afv1.VMPhaseReleased, afv1.ReasonUnbindingPendingUserAction},
		{"UnbindingPendingUserAction by the state alone", afv1.VMPhaseBound, agent("unbinding-pending-user-action", []agents.Condition{cond("Bound", "False", "Unbinding")}, nil), afv1.VMPhaseReleased, afv1.ReasonUnbindingPendingUserAction},
		{"UnbindingPendingUserAction after AgentUnbound: the reason moves on", afv1.VMPhaseReleased, agent("unbinding-pending-user-action", pending, nil), afv1.VMPhaseReleased, afv1.ReasonUnbindingPendingUserAction},
		{"UnbindingPendingUserAction while the status still says Available: never Available", afv1.VMPhaseAvailable, agent("unbinding-pending-user-action", pending, nil), afv1.VMPhaseReleased, afv1.ReasonUnbindingPendingUserAction},
		{"UnbindingPendingUserAction but the label is back (a new reservation): Bound wins", afv1.VMPhaseReleased, agent("unbinding-pending-user-action", pending, reserved), afv1.VMPhaseBound, afv1.ReasonAgentBound},
		{"unbinding after Bound: Released", afv1.VMPhaseBound, agent("unbinding", unbinding, nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"reclaiming (Bound=False/Unbinding) after Bound: Released", afv1.VMPhaseBound, agent("reclaiming", unbinding, nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"reclaiming-rebooting after Bound: Released", afv1.VMPhaseBound, agent("reclaiming-rebooting", unbinding, nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"reclaiming while the status still says Available: never Available", afv1.VMPhaseAvailable, agent("reclaiming", unbinding, nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"reclaiming with Validated=True still reported: never Available", afv1.VMPhaseAvailable, agent("reclaiming-rebooting", append([]agents.Condition{cond("Bound", "False", "Unbinding")}, ready...), nil), afv1.VMPhaseReleased, afv1.ReasonAgentUnbound},
		{"reclaiming reported as Bound=True: Bound (kept)", afv1.VMPhaseBound, agent("reclaiming", bound, nil), afv1.VMPhaseBound, afv1.ReasonAgentBound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phase, reason := bindingPhase(tt.prev, tt.agent)
			if phase != tt.wantPhase || reason != tt.wantReason {
				t.Fatalf("bindingPhase = %s/%s, want %s/%s", phase, reason, tt.wantPhase, tt.wantReason)
			}
			// The pool's view of the VM right after this pass: an Agent leaving a cluster is never supply.
			l := planner.Lifecycle(planner.VMObservation{Name: "vm-1", Phase: phase, Reason: reason, AgentBound: tt.agent.IsBound(), MachineRef: true})
			if tt.agent.IsUnbinding() && l == planner.VMAvailable {
				t.Fatalf("an Agent at %q counts as available capacity (lifecycle %s)", tt.agent.State, l)
			}
			if tt.agent.IsUnbinding() && tt.agent.IsSuitable() {
				t.Fatalf("an Agent at %q is suitable", tt.agent.State)
			}
		})
	}
}
