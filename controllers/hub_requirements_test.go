package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

var _ = Describe("Hub requirements: a pool below assisted-service's default minimum", func() {
	It("is warned (HardwareSufficient=False, a Warning Event) before its first VM, still creates VMs, and is satisfied once the template meets the minimum", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 2, MemoryMiB: 4096, DiskGiB: 120}
		})
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionHardwareSufficient)).To(Equal("False/" + afv1.ReasonBelowHubDefaultMinimum))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonBelowHubDefaultMinimum))
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
		c := findPoolCondition(getPool(pool), afv1.ConditionHardwareSufficient)
		Expect(c.Message).To(And(ContainSubstring("4096 MiB of memory, below the 8192 MiB"), ContainSubstring("for a worker")))
		Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionReady)).NotTo(Equal("False/" + afv1.ReasonBelowHubDefaultMinimum))
		Expect(vsphereAgents(pool)).To(BeEmpty(), "no demand yet: the warning came before any VM")

		By("demand arrives: a warning blocks nothing")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() []afv1.VsphereAgent { return vsphereAgents(pool) }, 60*time.Second, 250*time.Millisecond).ShouldNot(BeEmpty())
		first := vsphereAgents(pool)[0]
		Expect(c.LastTransitionTime.Time).NotTo(BeTemporally(">", first.CreationTimestamp.Time), "warned before the first VM")

		By("the template meets the worker minimum: the condition is satisfied and no new warning is recorded")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Template.MemoryMiB = 8192 })
		Eventually(func() string {
			return conditionOf(getPool(pool).Status.Conditions, afv1.ConditionHardwareSufficient)
		}, 60*time.Second, 200*time.Millisecond).Should(Equal("True/" + afv1.ReasonMeetsHubDefaults))
	})
})
