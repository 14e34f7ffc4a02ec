package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// The Agent CAPI provider reserves an Agent in two writes: first the Agent's agentMachineRef label (the
// AgentMachine's name on current providers, since cluster-api-provider-agent 2de8dad; its UID on older
// ones) with the agentMachineRefNamespace annotation, then the AgentMachine's status.agentRef.
var _ = Describe("The provider's reservation label (the AgentMachine's name or UID)", func() {
	DescribeTable("ends the AgentMachine's demand and records its Machine before agentRef is written",
		func(ctx context.Context, value func(am agents.AgentMachine) string) {
			_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
			Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
			Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
			Eventually(func() int32 { return getPool(pool).Status.WaitingAgentMachines }, 60*time.Second, 250*time.Millisecond).Should(Equal(int32(1)))

			By("the provider's first write: the Agent labelled with the AgentMachine's name or UID, no agentRef yet")
			ams := agents.NewList(agents.AgentMachineGVK)
			Expect(k8s.List(ctx, ams, client.InNamespace(s.ControlPlaneNamespace))).To(Succeed())
			Expect(ams.Items).To(HaveLen(1))
			am := agents.AgentMachineFrom(&ams.Items[0])
			va := vsphereAgents(pool)[0]
			labelReserved(ctx, s, va.Status.VM.AgentName, am, value(am))

			Eventually(func() int32 { return getPool(pool).Status.WaitingAgentMachines }, 60*time.Second, 250*time.Millisecond).
				Should(Equal(int32(0)), "a labelled Agent's AgentMachine no longer waits")
			Eventually(func() string { return vsphereAgents(pool)[0].Status.VM.MachineName }, 60*time.Second, 250*time.Millisecond).
				Should(Equal(am.OwnerMachine), "the reservation's Machine, found by the label")
			Expect(vsphereAgents(pool)).To(HaveLen(1), "no VM for demand that was already served")
		},
		Entry("current providers: the AgentMachine's name", func(am agents.AgentMachine) string { return am.Name }),
		Entry("providers before 2de8dad: the AgentMachine's UID", func(am agents.AgentMachine) string { return string(am.UID) }),
	)
})
