package world_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// TestRegisteredAgentIsBoundOncePrepared walks the operator's side by hand: a VM boots the ISO,
// its Agent registers unapproved (not bound), the "operator" labels and approves it, the provider binds it.
func TestRegisteredAgentIsBoundOncePrepared(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	createVM(t, vc, "hc1-worker-0", "[LocalDS_0] discovery.iso")
	d, _ := newWorld(t, s, world.Options{VSphere: vc})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	until(t, d, "the VM registered and an AgentMachine waits", func() bool {
		return len(list(t, "Agent", s.Namespace)) == 1 && len(waiting(t, s)) == 1
	})
	agents := list(t, "Agent", s.Namespace)
	if len(agents) != 1 {
		t.Fatalf("agents = %d", len(agents))
	}
	key := client.ObjectKeyFromObject(&agents[0])
	if _, taken := agents[0].GetLabels()[world.LabelAgentMachineRef]; taken {
		t.Fatal("unprepared agent bound")
	}

	hostname := "hc1-worker-0-" + s.Namespace // names a Node in the API server the tests share
	prepareRegisteredAgent(t, s, get(t, "Agent", key), hostname)
	until(t, d, "the prepared Agent is installed and its Machine has the Node", func() bool {
		ms := list(t, "Machine", s.ControlPlaneNamespace)
		return len(ms) == 1 && str(&ms[0], "status", "nodeRef", "name") != ""
	})

	a := get(t, "Agent", key)
	if st, _ := unstructuredcond.StatusReason(a, "Bound"); st != "True" || a.GetLabels()[world.LabelAgentMachineRef] == "" {
		t.Fatalf("prepared agent not bound: %v", a.Object)
	}
	if st, _ := unstructuredcond.StatusReason(a, "Installed"); st != "True" {
		t.Errorf("Installed = %s with no InstallDelay", st)
	}
	m := list(t, "Machine", s.ControlPlaneNamespace)[0]
	if str(&m, "status", "nodeRef", "name") != hostname {
		t.Errorf("nodeRef = %v", m.Object["status"])
	}
}

// TestReservationBeatsAStaleUnapprove shows the race the operator must lose gracefully: it read an
// unbound Agent, the provider reserved it, the operator's optimistic-lock patch then conflicts.
func TestReservationBeatsAStaleUnapprove(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{BindingDisabled: true})
	key := prepareAgent(t, s, "race", true)
	operatorsRead := get(t, "Agent", key)

	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	until(t, d, "an AgentMachine waits", func() bool { return len(waiting(t, s)) == 1 })
	am := waiting(t, s)[0]
	must(t, d.ReserveAgent(t.Context(), key, types.NamespacedName{Namespace: am.GetNamespace(), Name: am.GetName()}))

	unapprove := operatorsRead.DeepCopy()
	patch := client.MergeFromWithOptions(operatorsRead, client.MergeFromWithOptimisticLock{})
	_ = unstructured.SetNestedField(unapprove.Object, false, "spec", "approved")
	if err := k8s.Patch(t.Context(), unapprove, patch); !apierrors.IsConflict(err) {
		t.Fatalf("stale unapprove: want conflict, got %v", err)
	}
	if approved, _, _ := unstructured.NestedBool(get(t, "Agent", key).Object, "spec", "approved"); !approved {
		t.Error("agent unapproved despite the reservation")
	}
}

// TestRunStopsWithItsContext checks the loop mode makes progress and returns on cancel.
func TestRunStopsWithItsContext(t *testing.T) {
	s := scenario(t)
	d, err := world.New(world.Options{Client: k8s, Namespaces: s.Namespaces(), InfraEnv: &s.InfraEnv, Kubeconfig: kubeconfig})
	must(t, err)
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	prepareAgent(t, s, "loop", true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx, 10*time.Millisecond)
	}()
	deadline := time.Now().Add(60 * time.Second) // CAPI renders the Machine first
	for {
		ams := list(t, "AgentMachine", s.ControlPlaneNamespace)
		if len(ams) == 1 && str(&ams[0], "status", "agentRef", "name") == "loop" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not bind the agent within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
