package world_test

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// A Machine deleted before the provider's first pass after adoption stays Deleting, as upstream: the
// provider hooks only a Machine that is not deleting, puts its deprovision finalizer on any AgentMachine
// that is not, and removes the finalizer only once CAPI reports WaitingForPreTerminateHook, which CAPI
// never does for a Machine without the hook (agent-provider-facts §3; docs/troubleshooting.md). Removing
// the finalizer by hand, as troubleshooting.md says, lets CAPI finish. The Machine is paused while it is
// deleted, so CAPI (a real process) holds still while the world takes its pass: the order that strands it
// (without the pause, CAPI usually deletes the AgentMachine before the provider's pass).
func TestMachineDeletedBeforeTheProviderHookedItStaysDeleting(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	if _, err := d.Step(t.Context()); err != nil { // renders the replicas; CAPI creates the rest on its own
		t.Fatal(err)
	}
	var victim types.NamespacedName
	poll(t, "CAPI created the Machine and adopted its AgentMachine, the world not stepped since", func() bool {
		adopting := adoptingMachines(t, s)
		if len(adopting) == 0 {
			return false
		}
		victim = adopting[0]
		return true
	})
	m := get(t, "Machine", victim)
	if _, hooked := m.GetAnnotations()[world.AnnotationPreTerminateHook]; hooked {
		t.Fatal("the Machine carries the provider's hook although the world took no pass since the adoption")
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.SetAnnotations(mergeMaps(m.GetAnnotations(), map[string]string{world.AnnotationPaused: "true"}))
	must(t, k8s.Patch(t.Context(), m, patch))
	must(t, k8s.Delete(t.Context(), m))
	poll(t, "the Machine deleting", func() bool { return get(t, "Machine", victim).GetDeletionTimestamp() != nil })

	if _, err := d.Step(t.Context()); err != nil { // the provider's first pass: finalizer, no hook
		t.Fatal(err)
	}
	m, am := get(t, "Machine", victim), get(t, "AgentMachine", victim)
	if _, hooked := m.GetAnnotations()[world.AnnotationPreTerminateHook]; hooked {
		t.Fatal("the provider hooked a deleting Machine")
	}
	if !slices.Contains(am.GetFinalizers(), world.FinalizerAgentMachine) {
		t.Fatalf("AgentMachine finalizers %v: the provider adds %s to an AgentMachine that is not deleting", am.GetFinalizers(), world.FinalizerAgentMachine)
	}

	patch = client.MergeFrom(m.DeepCopy())
	ann := m.GetAnnotations()
	delete(ann, world.AnnotationPaused)
	m.SetAnnotations(ann)
	must(t, k8s.Patch(t.Context(), m, patch))
	until(t, d, "CAPI deletes the AgentMachine and waits for it", func() bool {
		return deletingReason(t, victim) == "WaitingForInfrastructureDeletion"
	})
	for range 20 { // 2 s more of world passes: nothing releases it
		if _, err := d.Step(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	am = get(t, "AgentMachine", victim)
	if r := deletingReason(t, victim); r != "WaitingForInfrastructureDeletion" || am.GetDeletionTimestamp() == nil || !slices.Contains(am.GetFinalizers(), world.FinalizerAgentMachine) {
		t.Fatalf("Machine Deleting reason %q, AgentMachine deleting %v with finalizers %v: want the Machine stranded behind the finalizer",
			r, am.GetDeletionTimestamp() != nil, am.GetFinalizers())
	}

	// The manual fix of troubleshooting.md.
	must(t, k8s.Patch(t.Context(), am, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`))))
	until(t, d, "the Machine and its AgentMachine gone once the finalizer is removed", func() bool {
		return !exists(t, "Machine", victim) && !exists(t, "AgentMachine", victim)
	})
}

// deletingReason is the reason of the Machine's Deleting condition ("" when the Machine is gone).
func deletingReason(t *testing.T, key types.NamespacedName) string {
	t.Helper()
	if !exists(t, "Machine", key) {
		return ""
	}
	_, r := unstructuredcond.StatusReason(get(t, "Machine", key), "Deleting")
	return r
}
