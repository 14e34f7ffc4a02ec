package world_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// TestInPlaceNodePoolRendersAMachineSet: for an InPlace NodePool HyperShift renders a MachineSet named
// after the NodePool (no MachineDeployment), shaped as reconcileMachineSet writes it; real CAPI core turns
// it into Machines whose AgentMachines wait, and scales them down with it.
func TestInPlaceNodePoolRendersAMachineSet(t *testing.T) {
	s := scenarioOfType(t, world.UpgradeTypeInPlace)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	until(t, d, "CAPI made 2 Machines from the MachineSet, their AgentMachines wait", func() bool {
		return len(list(t, "Machine", s.ControlPlaneNamespace)) == 2 && len(waiting(t, s)) == 2
	})
	sets := list(t, "MachineSet", s.ControlPlaneNamespace)
	if len(sets) != 1 || sets[0].GetName() != s.NodePool.Name {
		t.Fatalf("MachineSets %v, want one named %s", names(sets), s.NodePool.Name)
	}
	ms := &sets[0]
	for _, o := range ms.GetOwnerReferences() {
		if o.Kind != "Cluster" { // CAPI's MachineSet controller makes the Cluster its owner
			t.Errorf("the MachineSet has owner %v: HyperShift renders it directly, no MachineDeployment owns it", o)
		}
	}
	if got := ms.GetAnnotations()[world.AnnotationNodePool]; got != s.NodePool.String() {
		t.Errorf("nodePool annotation = %q", got)
	}
	if got := ms.GetAnnotations()[world.AnnotationInPlaceMaxUnavailable]; got != "1" {
		t.Errorf("maxUnavailable annotation = %q, want 1", got)
	}
	selector, _, _ := unstructured.NestedStringMap(ms.Object, "spec", "selector", "matchLabels")
	templateLabels, _, _ := unstructured.NestedStringMap(ms.Object, "spec", "template", "metadata", "labels")
	for k, v := range selector {
		if templateLabels[k] != v {
			t.Errorf("selector label %s=%s missing from the template's labels %v", k, v, templateLabels)
		}
	}
	if len(selector) != 2 {
		t.Errorf("selector %v: want HyperShift's <infraID>-<cluster>-<nodepool> label and CAPI's cluster-name", selector)
	}
	for _, m := range list(t, "Machine", s.ControlPlaneNamespace) {
		owners := m.GetOwnerReferences()
		if len(owners) != 1 || owners[0].Kind != "MachineSet" || owners[0].Name != s.NodePool.Name {
			t.Errorf("Machine %s owners = %v, want the NodePool's MachineSet", m.GetName(), owners)
		}
		if got := m.GetAnnotations()[world.AnnotationNodePool]; got != s.NodePool.String() {
			t.Errorf("Machine %s nodePool annotation = %q (CAPI copies the template's)", m.GetName(), got)
		}
	}

	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	until(t, d, "the MachineSet at 1 replica and CAPI down to 1 Machine", func() bool {
		got, _, _ := unstructured.NestedInt64(get(t, "MachineSet", world.MachineSetOf(s)).Object, "spec", "replicas")
		return got == 1 && len(list(t, "Machine", s.ControlPlaneNamespace)) == 1
	})
}

func names(us []unstructured.Unstructured) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.GetName())
	}
	return out
}
