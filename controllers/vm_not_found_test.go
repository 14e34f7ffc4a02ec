package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// Issue #38: a single NotFound does not declare a VM gone. vCenter answers NotFound for a VM while it is
// unregistered and registered again; a discovery VM declared gone is Failed and replaced. The VM is
// declared gone only when a second look-up (by instance UUID and BIOS UUID, a minute later on the
// operator's clock) finds nothing either.
var _ = Describe("A VM not found in vCenter", func() {
	It("is confirmed before it is declared gone: a transient NotFound creates no replacement, a deletion does", func(ctx context.Context) {
		op, s, d, pool := startPoolScenarioWith(operatorOptions{}, world.Options{BindingDisabled: true}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return phaseCount(pool, afv1.VMPhaseAvailable) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		va := vsphereAgents(pool)[0]
		uuid := va.Status.VM.InstanceUUID
		// vmsListed is how many of the pool's VMs the simulator lists: the hidden VM is out of its
		// registry, so 0 while hidden means no replacement was created either.
		noReplacement := func(vmsListed int) func(g Gomega) {
			return func(g Gomega) {
				g.Expect(vsphereAgents(pool)).To(HaveLen(1))
				g.Expect(poolVMs(pool)).To(HaveLen(vmsListed))
				g.Expect(freshVA(ctx, &va).Status.VM.Phase).NotTo(Equal(afv1.VMPhaseFailed))
			}
		}

		By("vCenter answers NotFound for the VM while it is registered again")
		Expect(vc.HideVM(uuid)).To(Succeed())
		op.clock.Step(3 * time.Minute) // past the VM check interval
		pokeVsphereAgents(pool)
		Eventually(func() string { return vmHealthyReason(ctx, &va) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonVMNotFoundUnconfirmed))
		Expect(vmHealthyMessage(ctx, &va)).To(ContainSubstring("looked up again by instance UUID and BIOS UUID"))
		Consistently(noReplacement(0), 2*time.Second, 250*time.Millisecond).Should(Succeed())

		By("it is back when the confirming look-up runs: observed as usual, never Failed")
		Expect(vc.RestoreVM(uuid)).To(Succeed())
		op.clock.Step(90 * time.Second)
		pokeVsphereAgents(pool)
		Eventually(func() string { return vmHealthyReason(ctx, &va) }, 30*time.Second, 250*time.Millisecond).Should(Equal("VMRunning"))
		Consistently(noReplacement(1), 2*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name)).NotTo(ContainElement("VMNotFound"))
		Expect(vaPhaseReason(ctx, &va)).To(Equal(string(afv1.VMPhaseAvailable) + "/AgentPrepared"))

		By("the VM is destroyed for real: suspect first, declared gone and replaced after the confirmation")
		user := loginVSphereUser(ctx)
		vm := user.vm(ctx, uuid)
		powerOff(ctx, vm)
		task, err := vm.Destroy(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())
		op.clock.Step(3 * time.Minute)
		pokeVsphereAgents(pool)
		Eventually(func() string { return vmHealthyReason(ctx, &va) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal(afv1.ReasonVMNotFoundUnconfirmed))
		Consistently(func(g Gomega) {
			g.Expect(vsphereAgents(pool)).To(HaveLen(1), "no replacement before the confirmation")
		}, 2*time.Second, 250*time.Millisecond).Should(Succeed())

		op.clock.Step(90 * time.Second)
		pokeVsphereAgents(pool)
		Eventually(func() string { return vaPhaseReason(ctx, &va) }, 30*time.Second, 250*time.Millisecond).
			Should(Equal(string(afv1.VMPhaseFailed) + "/VMNotFound"))
		Eventually(func() []string { return objectEventReasons(ctx, va.Namespace, "VsphereAgent", va.Name) }, 10*time.Second, 250*time.Millisecond).
			Should(ContainElement("VMNotFound"))
		Eventually(func(g Gomega) {
			g.Expect(phaseCount(pool, afv1.VMPhaseAvailable)).To(Equal(1))
			g.Expect(vc.VMByInstanceUUID(uuid)).To(BeNil())
			g.Expect(poolVMs(pool)).To(HaveLen(1), "one replacement")
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
	})
})
