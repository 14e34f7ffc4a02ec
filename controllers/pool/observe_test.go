package pool

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// TestObserveVMs checks the pool's thin mapper from VsphereAgents and Agents to the planner's
// observations: the planner decides, the mapper only copies facts.
func TestObserveVMs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	failedAt, registeredAt, gone := metav1.NewTime(t0.Add(time.Minute)), metav1.NewTime(t0.Add(2*time.Minute)), metav1.NewTime(t0)
	va := func(name string, phase afv1.VMPhase) afv1.VsphereAgent {
		v := afv1.VsphereAgent{}
		v.Name, v.CreationTimestamp = name, metav1.NewTime(t0)
		v.Status.VM.Phase = phase
		return v
	}
	failed := va("failed", afv1.VMPhaseFailed)
	failed.Status.VM.Reason, failed.Status.VM.LastTransitionTime = afv1.ReasonDuplicateName, &failedAt
	registered := va("registered", afv1.VMPhaseAvailable)
	registered.Status.Conditions = []metav1.Condition{{Type: afv1.ConditionAgentRegistered, Status: metav1.ConditionTrue, LastTransitionTime: registeredAt}}
	boundEarly := va("bound-early", afv1.VMPhaseAvailable)
	deleting := va("deleting", afv1.VMPhaseAvailable)
	deleting.DeletionTimestamp = &gone
	issued := va("issued", afv1.VMPhaseProvisioning)
	withMachine := va("with-machine", afv1.VMPhaseProvisioning)
	withMachine.Status.VM.MachineName = "m-1"

	s := &poolScope{
		vas: []afv1.VsphereAgent{failed, registered, boundEarly, deleting, issued, withMachine},
		matching: []agents.Agent{
			{Name: "a-bound", Labels: map[string]string{afv1.LabelVsphereAgent: "bound-early", agents.LabelAgentMachineRef: "am-1"}},
			{Name: "a-free", Labels: map[string]string{afv1.LabelVsphereAgent: "registered"}},
		},
	}
	got := observeVMs(s, sets.New("issued"))
	want := map[string]planner.VMLifecycle{
		"failed": planner.VMFailed, "registered": planner.VMAvailable, "bound-early": planner.VMInUse,
		"deleting": planner.VMReleasing, "issued": planner.VMReleasing, "with-machine": planner.VMInUse,
	}
	if len(got) != len(s.vas) {
		t.Fatalf("%d observations for %d VsphereAgents", len(got), len(s.vas))
	}
	for i, o := range got {
		if o.Name != s.vas[i].Name {
			t.Fatalf("observation %d is %s, want %s (same order as the VsphereAgents)", i, o.Name, s.vas[i].Name)
		}
		if l := planner.Lifecycle(o); l != want[o.Name] {
			t.Errorf("%s: lifecycle %s, want %s (%+v)", o.Name, l, want[o.Name], o)
		}
	}
	if !got[0].PhaseChangedAt.Equal(failedAt.Time) || got[0].Reason != afv1.ReasonDuplicateName {
		t.Errorf("failed VM's failure time/reason not copied: %+v", got[0])
	}
	if !got[1].RegisteredAt.Equal(registeredAt.Time) {
		t.Errorf("registration time not copied: %+v", got[1])
	}
}
