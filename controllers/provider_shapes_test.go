package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// What the current Agent CAPI provider writes, and when, must not mislead the operator's demand and
// supply: a reservation by name takes an Agent out of the free supply at once, and the "not reserved"
// conditions it writes on every AgentMachine before its owner Machine exists are not demand.
var _ = Describe("The current provider's writes", func() {
	It("never counts an Agent reserved by name (label only, before agentRef) as free supply", func(ctx context.Context) {
		_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.AvailableAgents).To(Equal(int32(1)))
			g.Expect(p.Status.WaitingAgentMachines).To(Equal(int32(1)))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())

		By("the provider's first write: the Agent labelled with the AgentMachine's name and namespace")
		ams := agents.NewList(agents.AgentMachineGVK)
		Expect(k8s.List(ctx, ams, client.InNamespace(s.ControlPlaneNamespace))).To(Succeed())
		Expect(ams.Items).To(HaveLen(1))
		am := agents.AgentMachineFrom(&ams.Items[0])
		first := vsphereAgents(pool)[0]
		labelReserved(ctx, s, first.Status.VM.AgentName, am, am.Name)
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(p.Status.AvailableAgents).To(BeZero(), "a reserved Agent is not free")
			g.Expect(p.Status.WaitingAgentMachines).To(BeZero())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())

		By("a second Machine waits: it gets a VM of its own, not the reserved Agent")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(poolVMs(pool)).To(HaveLen(2))
			p := getPool(pool)
			g.Expect(p.Status.AvailableAgents).To(Equal(int32(1)), "only the new VM's Agent is free")
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func() int { return len(poolVMs(pool)) }, 3*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(getVA(&first).Status.VM.Phase).To(Equal(afv1.VMPhaseBound), "the reserved Agent's VM is taken")
	})

	It("is unaffected by the NoSuitableAgents conditions written before the owner Machine exists", func(ctx context.Context) {
		_, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{}, nil)

		By("an AgentMachine of the NodePool that no Machine owns (yet): the provider reports it not reserved")
		orphan := agents.New(agents.AgentMachineGVK)
		orphan.SetNamespace(s.ControlPlaneNamespace)
		orphan.SetName(s.NodePool.Name + "-unowned")
		orphan.SetAnnotations(map[string]string{agents.AnnotationNodePool: s.NodePool.Namespace + "/" + s.NodePool.Name})
		matchLabels := map[string]any{}
		for k, v := range s.AgentLabels {
			matchLabels[k] = v
		}
		Expect(unstructured.SetNestedMap(orphan.Object, map[string]any{"matchLabels": matchLabels}, "spec", "agentLabelSelector")).To(Succeed())
		Expect(k8s.Create(ctx, orphan)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, orphan))).To(Succeed()) })
		Eventually(func(g Gomega) {
			got := agents.New(agents.AgentMachineGVK)
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(orphan), got)).To(Succeed())
			am := agents.AgentMachineFrom(got)
			g.Expect(am.WaitsForAgent()).To(BeTrue(), "the provider wrote AgentReserved=False/NoSuitableAgents")
			g.Expect(am.OwnerMachine).To(BeEmpty())
			g.Expect(getPool(pool).Status.AgentMachines).To(Equal(int32(1)), "the pool saw it")
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(getPool(pool).Status.WaitingAgentMachines).To(BeZero(), "counted as demand")
			g.Expect(poolVMs(pool)).To(BeEmpty(), "a VM for an AgentMachine no Machine owns")
		}, 3*time.Second, 250*time.Millisecond).Should(Succeed())

		By("a real scale-up next to it gets exactly its own VM")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseBound) }, 90*time.Second, 250*time.Millisecond).Should(Equal(1))
		Consistently(func() int { return len(poolVMs(pool)) }, 3*time.Second, 250*time.Millisecond).Should(Equal(1))
	})
})

// labelReserved writes the provider's first reservation write on the Agent: agentMachineRef=value with the
// agentMachineRefNamespace annotation and spec.clusterDeploymentName; the AgentMachine's agentRef comes
// later (not written here).
func labelReserved(ctx context.Context, s *world.Scenario, agentName string, am agents.AgentMachine, value string) {
	GinkgoHelper()
	agent := getAgent(ctx, s.Namespace, agentName)
	patch := client.MergeFrom(agent.DeepCopy())
	labels := agent.GetLabels()
	labels[agents.LabelAgentMachineRef] = value
	agent.SetLabels(labels)
	annotations := agent.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[agents.AnnotationAgentMachineRefNamespace] = am.Namespace
	agent.SetAnnotations(annotations)
	_ = unstructured.SetNestedMap(agent.Object, map[string]any{"name": s.HostedCluster.Name, "namespace": am.Namespace}, "spec", "clusterDeploymentName")
	Expect(k8s.Patch(ctx, agent, patch)).To(Succeed())
}
