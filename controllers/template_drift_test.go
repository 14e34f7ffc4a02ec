package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/vim25/mo"
	"k8s.io/client-go/util/retry"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// vmMemoryMiB reads a VM's configured memory from the simulator over SOAP.
func vmMemoryMiB(ctx context.Context, instanceUUID string) int32 {
	GinkgoHelper()
	vm := adminVM(ctx, instanceUUID)
	var props mo.VirtualMachine
	Expect(vm.Properties(ctx, vm.Reference(), []string{"config.hardware"}, &props)).To(Succeed())
	return props.Config.Hardware.MemoryMB
}

var _ = Describe("Template drift", func() {
	It("a template change reports the bound workers of the old one without touching them, and replaces the unbound VM", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)

		By("two bound workers and one VM whose Agent is not bound (the provider's binding off)")
		Expect(d.SetReplicas(ctx, s.NodePool, 2)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(2))
		d.SetBinding(false)
		Expect(d.SetReplicas(ctx, s.NodePool, 3)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		var bound []afv1.VsphereAgent
		var unbound afv1.VsphereAgent
		for _, va := range vsphereAgents(pool) {
			Expect(va.Status.VM.Template).NotTo(BeNil(), "every VsphereAgent records the template its VM was made from")
			Expect(va.Status.VM.Template.Shape).To(HaveKeyWithValue("memoryMiB", "8192"))
			if va.Status.VM.Phase == afv1.VMPhaseAvailable {
				unbound = va
			} else {
				bound = append(bound, va)
			}
		}
		Expect(bound).To(HaveLen(2))
		Eventually(func() string { return conditionOf(getPool(pool).Status.Conditions, afv1.ConditionTemplateCurrent) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal("True/" + afv1.ReasonTemplateCurrent))

		By("raising the template's memory")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p := getPool(pool)
			p.Spec.Template.MemoryMiB = 12288
			return k8s.Update(ctx, p)
		})).To(Succeed())

		By("the pool reports the two bound workers, what differs, and announces the change")
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionTemplateCurrent)).To(Equal("False/" + afv1.ReasonTemplateDrift))
			dr := p.Status.TemplateDrift
			g.Expect(dr).NotTo(BeNil())
			g.Expect(dr.BoundWorkers).To(BeEquivalentTo(2))
			g.Expect(dr.Workers).To(ConsistOf(bound[0].Name, bound[1].Name))
			g.Expect(dr.Diff).To(Equal("memoryMiB 8192 -> 12288"))
			g.Expect(dr.Template).NotTo(BeNil())
			g.Expect(dr.Template.Shape).To(HaveKeyWithValue("memoryMiB", "12288"))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() []string { return poolEventMessagesWith(ctx, pool, afv1.ReasonTemplateChanged) }, 30*time.Second, 250*time.Millisecond).
			Should(ContainElement(ContainSubstring("memoryMiB 8192 -> 12288")))

		By("the unbound VM is replaced by one of the new template; the bound workers keep their VMs and shape")
		Eventually(func(g Gomega) {
			var replacement *afv1.VsphereAgent
			for _, va := range vsphereAgents(pool) {
				g.Expect(va.Name).NotTo(Equal(unbound.Name), "the VsphereAgent of the old template is gone")
				if va.Status.VM.Phase == afv1.VMPhaseAvailable {
					replacement = va.DeepCopy()
				}
			}
			g.Expect(vc.VMByInstanceUUID(unbound.Status.VM.InstanceUUID)).To(BeNil(), "its VM is destroyed")
			g.Expect(replacement).NotTo(BeNil())
			g.Expect(replacement.Status.VM.Template.Shape).To(HaveKeyWithValue("memoryMiB", "12288"))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Eventually(func() []string { return poolEventMessagesWith(ctx, pool, afv1.ReasonOutdatedTemplate) }, 30*time.Second, 250*time.Millisecond).
			Should(ContainElement(And(ContainSubstring(unbound.Name), ContainSubstring("memoryMiB 8192 -> 12288"))))
		for _, was := range bound {
			va := &afv1.VsphereAgent{}
			Expect(k8s.Get(ctx, key(was.Namespace, was.Name), va)).To(Succeed())
			Expect(va.UID).To(Equal(was.UID))
			Expect(va.DeletionTimestamp).To(BeNil())
			Expect(va.Status.VM.Phase).To(Equal(afv1.VMPhaseBound))
			Expect(va.Status.VM.Template.Hash).To(Equal(was.Status.VM.Template.Hash), "the record is what the VM was made from")
			Expect(vmMemoryMiB(ctx, was.Status.VM.InstanceUUID)).To(BeEquivalentTo(8192), "a bound worker is never reconfigured")
		}
		for _, va := range vsphereAgents(pool) {
			if va.Status.VM.Phase == afv1.VMPhaseAvailable {
				Expect(vmMemoryMiB(ctx, va.Status.VM.InstanceUUID)).To(BeEquivalentTo(12288), "the replacement is made of the new template")
			}
		}

		By("once the provider binds again, the new worker is current and the drift still counts the two old ones")
		d.SetBinding(true)
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(3))
		Consistently(func() int32 { return getPool(pool).Status.TemplateDrift.BoundWorkers }, 3*time.Second, 500*time.Millisecond).Should(BeEquivalentTo(2))
	})
})
