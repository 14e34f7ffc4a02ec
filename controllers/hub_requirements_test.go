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

var _ = Describe("Hub requirements: a host the hub finds too small", func() {
	It("fails the VM with the hub's validation message, stops creating that shape and says why, and serves the NodePool once the template is large enough", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 2, MemoryMiB: 4096, DiskGiB: 120}
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())

		By("the host registers, the hub marks it insufficient: the VM is Failed with the validation's message")
		var failed afv1.VsphereAgent
		Eventually(func(g Gomega) {
			vas := vsphereAgents(pool)
			g.Expect(vas).To(HaveLen(1))
			failed = vas[0]
			g.Expect(failed.Status.VM.Phase).To(Equal(afv1.VMPhaseFailed))
			g.Expect(failed.Status.VM.Reason).To(Equal(afv1.ReasonHostValidationFailed))
			c := conditionOf(failed.Status.Conditions, afv1.ConditionAgentValidated)
			g.Expect(c).To(Equal("False/" + afv1.ReasonHostValidationsFailing))
		}, 120*time.Second, 250*time.Millisecond).Should(Succeed())
		msg := ""
		for _, c := range failed.Status.Conditions {
			if c.Type == afv1.ConditionAgentValidated {
				msg = c.Message
			}
		}
		Expect(msg).To(ContainSubstring("has-memory-for-role (hardware)"))

		By("the pool names the validation and creates no further VM of that shape")
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionHardwareSufficient)).To(Equal("False/" + afv1.ReasonHostValidationFailing))
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionCapacitySatisfied)).To(Equal("False/" + afv1.ReasonHostValidationFailing))
			g.Expect(findPoolCondition(p, afv1.ConditionHardwareSufficient).Message).To(And(ContainSubstring(failed.Status.VM.Name), ContainSubstring("has-memory-for-role")))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonHostValidationFailing))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Consistently(func() int { return len(vsphereAgents(pool)) }, 5*time.Second, 250*time.Millisecond).Should(Equal(1))

		By("more memory is a new shape: a VM of it is created and serves the NodePool")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Template.MemoryMiB = 8192 })
		Eventually(func() int { return boundAgentsOf(pool) }, 120*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionHardwareSufficient)).To(Equal("True/" + afv1.ReasonMeetsHubDefaults))
	})
})
