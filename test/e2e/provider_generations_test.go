package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// Hubs run different generations of the Agent CAPI provider: current ones label a reserved Agent with the
// AgentMachine's name (plus the agentMachineRefNamespace annotation) and write metav1.Conditions; older ones
// (before cluster-api-provider-agent 2de8dad) wrote its UID and CAPI v1beta1 conditions, under an older
// AgentMachine CRD. Under each, the provider reserves an Agent while the operator is down; the restarted
// operator must read that reservation (no second VM for served demand, the right Machine recorded) and
// clean up after scale-down through CAPI.
func TestProviderGenerationsAcrossARestart(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	for _, tc := range []struct {
		name     string
		provider world.ProviderGeneration
		legacy   bool
		// label is the agentMachineRef value the generation writes for an AgentMachine.
		label func(am *unstructured.Unstructured) string
	}{
		{"current provider: AgentMachine name", world.ProviderCurrent, false, func(am *unstructured.Unstructured) string { return am.GetName() }},
		{"older provider: AgentMachine UID", world.ProviderUIDLabel, true, func(am *unstructured.Unstructured) string { return string(am.GetUID()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			e := startE2E(ctx, t, e2eOptions{Provider: tc.provider, LegacyAgentProvider: tc.legacy, BindingDisabled: true})

			e.scale(ctx, 2)
			e.await(ctx, "2 VMs with prepared Agents, 2 AgentMachines waiting", plateauWait, func(s *harness.Snapshot) bool {
				return len(s.VMs) == 2 && countPhase(s, afv1.VMPhaseAvailable) == 2 && s.WaitingMachines() == 2
			})
			agent := e.tr.Last().VAs[0].Status.VM.AgentName

			e.stopManager()
			// The operator prepares an Agent before assisted-service has validated it: the provider takes it once
			// it is suitable (its requeue), so retry a refusal for a while.
			var amKey types.NamespacedName
			var err error
			for deadline := time.Now().Add(plateauWait); ; time.Sleep(pollInterval) {
				amKey, err = e.w.ReserveAgentForAnyWaiting(ctx, types.NamespacedName{Namespace: e.pool.Namespace, Name: agent})
				if err == nil || !errors.Is(err, world.ErrNotSuitable) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatalf("the provider reserving Agent %s while the operator is down: %v", agent, err)
			}
			am := agents.New(agents.AgentMachineGVK)
			if err := e.h.Client.Get(ctx, amKey, am); err != nil {
				t.Fatal(err)
			}
			a := agents.New(agents.AgentGVK)
			if err := e.h.Client.Get(ctx, types.NamespacedName{Namespace: e.pool.Namespace, Name: agent}, a); err != nil {
				t.Fatal(err)
			}
			if got, want := a.GetLabels()[agents.LabelAgentMachineRef], tc.label(am); got != want {
				t.Fatalf("the world's provider labelled Agent %s %s=%q, this generation writes %q", agent, agents.LabelAgentMachineRef, got, want)
			}
			machine := agents.AgentMachineFrom(am).OwnerMachine
			e.startManager()
			e.w.SetBinding(true)

			e.await(ctx, "scale 0 -> 2 after the restart", plateauWait, func(s *harness.Snapshot) bool { return s.ScaledUp(2) && s.Installed() == 2 })
			e.hold(ctx, 2)
			if got := vaOfAgent(e.tr.Last(), agent).Status.VM.MachineName; got != machine {
				e.tr.Violate("the VsphereAgent of Agent %s records Machine %q, the reservation names %q", agent, got, machine)
			}
			e.scale(ctx, 0)
			e.await(ctx, "scale 2 -> 0 cleaned up", plateauWait, func(s *harness.Snapshot) bool { return s.ScaledDown(0) })

			e.finish("e2e "+tc.name, 2, 0)
		})
	}
}

func countPhase(s *harness.Snapshot, phase afv1.VMPhase) int {
	n := 0
	for i := range s.VAs {
		if s.VAs[i].Status.VM.Phase == phase {
			n++
		}
	}
	return n
}

func vaOfAgent(s *harness.Snapshot, agent string) *afv1.VsphereAgent {
	for i := range s.VAs {
		if s.VAs[i].Status.VM.AgentName == agent {
			return &s.VAs[i]
		}
	}
	return &afv1.VsphereAgent{}
}
