package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

var _ = Describe("The NodePool's agentLabelSelector", func() {
	It("refuses a pool whose Agent labels cannot satisfy it (condition, Event, no VM), and serves the NodePool once the labels are fixed", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Agent.Labels = map[string]afv1.LabelValue{"example.com/pool": "someone-else"}
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())

		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionAgentLabelsMatch)).To(Equal("False/" + afv1.ReasonAgentLabelsMismatch))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionReady)).To(Equal("False/" + afv1.ReasonAgentLabelsMismatch))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(2))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonAgentLabelsMismatch))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(poolEventMessages(ctx, pool)).To(ContainElement(ContainSubstring("example.com/pool=" + s.AgentLabels["example.com/pool"])))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())
		Expect(poolVMs(pool)).To(BeEmpty())

		By("fixing spec.agent.labels")
		setPool(pool, func(p *afv1.VsphereAgentPool) {
			p.Spec.Agent.Labels = map[string]afv1.LabelValue{"example.com/pool": afv1.LabelValue(s.AgentLabels["example.com/pool"])}
		})
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionAgentLabelsMatch)).To(Equal("True/" + afv1.ReasonAgentLabelsMatch))
	})
})
