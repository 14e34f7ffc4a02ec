package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// agentMachine builds an AgentMachine as the provider leaves it: conditions (type/status/reason), an
// owner Machine when owned, status.agentRef when bound.
func agentMachine(ns string, conds [][3]string, owned bool, agentRef string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(world.AgentMachineGVK)
	u.SetNamespace(ns)
	u.SetName("am-1")
	if owned {
		u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Machine", Name: "m-1", UID: "u"}})
	}
	var cs []map[string]any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2]})
	}
	if cs != nil {
		unstructuredcond.Replace(u, cs)
	}
	if agentRef != "" {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"name": agentRef, "namespace": "hub"}, "status", "agentRef")
	}
	return u
}

func TestTrackerObserve(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	waiting := [][3]string{{world.CondAgentReserved, "False", world.ReasonNoSuitableAgents}}
	legacyWaiting := [][3]string{{world.CondReady, "False", world.ReasonNoSuitableAgents}}
	notFound := [][3]string{{world.CondAgentReserved, "False", world.ReasonAgentNotYetFound}}
	reserved := [][3]string{{world.CondAgentReserved, "True", world.ReasonAgentReserved}}

	for _, tc := range []struct {
		name  string
		steps []*unstructured.Unstructured
		want  machineTimes
	}{
		{"waits, is adopted, is bound", []*unstructured.Unstructured{
			agentMachine("cp-with", nil, false, ""),
			agentMachine("cp-with", waiting, false, ""),
			agentMachine("cp-with", waiting, true, ""),
			agentMachine("cp-with", reserved, true, "agent-1"),
		}, machineTimes{arm: armWith, burst: 2, seen: at(0), waiting: at(1), owned: at(2), bound: at(3), machine: "m-1"}},
		{"bound on the first look: never waiting", []*unstructured.Unstructured{
			agentMachine("cp-without", nil, true, ""),
			agentMachine("cp-without", reserved, true, "agent-1"),
		}, machineTimes{arm: armWithout, burst: 2, seen: at(0), owned: at(0), bound: at(1), machine: "m-1"}},
		{"an older provider's Ready reason counts; the first wait is kept", []*unstructured.Unstructured{
			agentMachine("cp-with", legacyWaiting, true, ""),
			agentMachine("cp-with", notFound, true, ""),
			agentMachine("cp-with", waiting, true, ""),
			agentMachine("cp-with", reserved, true, "agent-1"),
			agentMachine("cp-with", reserved, true, "agent-1"),
		}, machineTimes{arm: armWith, burst: 2, seen: at(0), waiting: at(0), owned: at(0), bound: at(3), machine: "m-1"}},
		{"AgentNotYetFound is not NoSuitableAgents", []*unstructured.Unstructured{
			agentMachine("cp-with", notFound, true, ""),
		}, machineTimes{arm: armWith, burst: 2, seen: at(0), owned: at(0), machine: "m-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker(nil, map[string]arm{"cp-with": armWith, "cp-without": armWithout})
			tr.setBurst(2)
			for i, u := range tc.steps {
				tr.observe(u, at(i))
			}
			tr.observe(agentMachine("elsewhere", waiting, true, ""), at(0)) // not a bench namespace: ignored
			got := tr.machines[types.NamespacedName{Namespace: tc.steps[0].GetNamespace(), Name: "am-1"}]
			if got == nil || *got != tc.want {
				t.Errorf("tracked %+v, want %+v", got, tc.want)
			}
			if len(tr.machines) != 1 {
				t.Errorf("tracked %d AgentMachines, want 1", len(tr.machines))
			}
		})
	}
}

// machine builds a CAPI Machine, with status.nodeRef when its Node joined.
func machine(ns, name, node string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(world.MachineGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	if node != "" {
		_ = unstructured.SetNestedField(u.Object, node, "status", "nodeRef", "name")
	}
	return u
}

// TestTrackerNodeReady: an AgentMachine's node-ready time is the first time its owner Machine had
// status.nodeRef, read when the tracker's snapshot is taken (the Machine may be seen before or after).
func TestTrackerNodeReady(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tr := newTracker(nil, map[string]arm{"cp-with": armWith})
	tr.observe(agentMachine("cp-with", nil, true, "agent-1"), at(0))
	tr.observeMachine(machine("cp-with", "m-1", ""), at(1))
	tr.observeMachine(machine("cp-with", "m-1", "worker-1"), at(5))
	tr.observeMachine(machine("cp-with", "m-1", "worker-1"), at(9)) // the first time stays
	tr.observeMachine(machine("elsewhere", "m-1", "worker-9"), at(2))
	snap := tr.snapshot()
	if len(snap) != 1 || !snap[0].nodeReady.Equal(at(5)) {
		t.Fatalf("snapshot %+v, want node ready at %s", snap, at(5))
	}
	if seen, bound, nodes := tr.counts(); seen != 1 || bound != 1 || nodes != 1 {
		t.Errorf("counts = %d, %d, %d; want 1, 1, 1", seen, bound, nodes)
	}
}
