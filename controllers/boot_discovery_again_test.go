package controllers_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/api/meta"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// A worker whose VM is power-cycled boots whatever its boot order puts first. The operator makes every VM
// boot its disk before the CD-ROM (internal/vsphere/bootorder.go), so an installed worker boots its
// installed disk even with the discovery ISO still attached (ejection off). Someone who puts the CD-ROM
// first by hand gets the discovery image again (the world also takes the CD-ROM first when no boot order
// says otherwise, see docs/world.md), and assisted-service puts its Agent at
// installing-pending-user-action ("Wrong boot order detection").
var _ = Describe("A worker that boots its discovery image again", func() {
	It("does not happen with the operator's boot order: a power-cycled installed worker boots its disk, its ISO still attached", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		va := theInstalledWorker(ctx, s, pool)
		Expect(pool.Spec.ISO.EjectAfterInstall).To(BeFalse())
		vm := adminVM(ctx, va.Status.VM.InstanceUUID)
		Expect(cdromISOs(ctx, vm)).NotTo(BeEmpty(), "the discovery ISO is still in the CD-ROM")

		By("power-cycling the VM by hand")
		powerCycle(ctx, d, vm, va.Status.VM.BIOSUUID)
		passes := d.Timing().Passes
		Eventually(func() int { return d.Timing().Passes }, 60*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", passes+3),
			"the world saw the host boot again")

		a := agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName))
		Expect(a.State).To(Equal("added-to-existing-cluster"), "the host booted its installed disk")
		Expect(a.IsInstalled()).To(BeTrue())
		got := getVA(&va)
		Expect(got.Status.VM.Reason).NotTo(Equal(afv1.ReasonInstallingPendingUserAction))
		Expect(conditionOf(got.Status.Conditions, afv1.ConditionReady)).To(Equal("True/" + afv1.ReasonBound))
	})

	It("is reported InstallingPendingUserAction with assisted-service's message and a Warning Event, and stays Bound", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, nil)
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		va := theInstalledWorker(ctx, s, pool)
		Expect(conditionOf(getVA(&va).Status.Conditions, afv1.ConditionReady)).To(Equal("True/" + afv1.ReasonBound))

		By("putting the CD-ROM first in the boot order by hand, then power-cycling the VM, the ISO still in its CD-ROM")
		vm := adminVM(ctx, va.Status.VM.InstanceUUID)
		task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{BootOptions: &types.VirtualMachineBootOptions{
			BootOrder: []types.BaseVirtualMachineBootOptionsBootableDevice{&types.VirtualMachineBootOptionsBootableCdromDevice{}}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())
		powerCycle(ctx, d, vm, va.Status.VM.BIOSUUID)

		Eventually(func(g Gomega) {
			a := agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName))
			g.Expect(a.State).To(Equal(agents.StateInstallingPendingUserAction))
			got := getVA(&va)
			g.Expect(got.Status.VM.Phase).To(Equal(afv1.VMPhaseBound), "it still backs its Machine")
			g.Expect(got.Status.VM.Reason).To(Equal(afv1.ReasonInstallingPendingUserAction))
			c := meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(BeEquivalentTo("False"))
			g.Expect(c.Reason).To(Equal(afv1.ReasonInstallingPendingUserAction))
			g.Expect(c.Message).To(ContainSubstring("Expected the host to boot from disk"), "assisted-service's own words")
			g.Expect(c.Message).To(ContainSubstring("ejectAfterInstall"))
			g.Expect(vaEvents(ctx, got)).To(ContainElement(HavePrefix(afv1.ReasonInstallingPendingUserAction + ": ")))
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(poolVMs(pool)).To(HaveLen(1), "nothing is destroyed")
	})
})

// With spec.iso.recoverDiscoveryBoot the operator resolves it: eject, disk first, reset, once.
var _ = Describe("A pool that recovers workers that boot their discovery image again", func() {
	It("ejects the ISO, puts the disk first and resets the VM once; the worker boots its installed disk and is Ready again", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) { p.Spec.ISO.RecoverDiscoveryBoot = true })
		Expect(pool.Spec.ISO.EjectAfterInstall).To(BeFalse(), "the ISO stays attached after installation")
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		va := theInstalledWorker(ctx, s, pool)
		vm := adminVM(ctx, va.Status.VM.InstanceUUID)
		Expect(cdromISOs(ctx, vm)).NotTo(BeEmpty())

		By("putting the CD-ROM first by hand and power-cycling the VM: its host boots discovery again")
		task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{BootOptions: &types.VirtualMachineBootOptions{
			BootOrder: []types.BaseVirtualMachineBootOptionsBootableDevice{&types.VirtualMachineBootOptionsBootableCdromDevice{}}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(task.Wait(ctx)).To(Succeed())
		powerCycle(ctx, d, vm, va.Status.VM.BIOSUUID)

		By("the operator ejects, resets, and the host boots its installed disk")
		Eventually(func(g Gomega) {
			got := getVA(&va)
			g.Expect(vaEvents(ctx, got)).To(ContainElements(
				HavePrefix(afv1.ReasonInstallingPendingUserAction+": "),
				HavePrefix(afv1.ReasonDiscoveryBootReset+": "),
				HavePrefix(afv1.ReasonDiscoveryBootRecovered+": ")))
			a := agents.AgentFrom(getAgent(ctx, s.Namespace, va.Status.VM.AgentName))
			g.Expect(a.State).To(Equal("added-to-existing-cluster"))
			g.Expect(a.IsInstalled()).To(BeTrue())
			g.Expect(got.Status.VM.Reason).NotTo(Equal(afv1.ReasonInstallingPendingUserAction))
			g.Expect(got.Status.VM.DiscoveryBootResetAt).To(BeNil(), "cleared once the Agent left the state")
			g.Expect(conditionOf(got.Status.Conditions, afv1.ConditionReady)).To(Equal("True/" + afv1.ReasonBound))
			g.Expect(conditionOf(got.Status.Conditions, afv1.ConditionISOEjected)).To(Equal("True/" + afv1.ReasonEjected))
		}, 90*time.Second, 250*time.Millisecond).Should(Succeed())
		Expect(cdromISOs(ctx, vm)).To(BeEmpty(), "the ISO is ejected")
		var m mo.VirtualMachine
		Expect(vm.Properties(ctx, vm.Reference(), []string{"config.bootOptions"}, &m)).To(Succeed())
		Expect(m.Config.BootOptions.BootOrder).NotTo(BeEmpty())
		Expect(m.Config.BootOptions.BootOrder[0]).To(BeAssignableToTypeOf(&types.VirtualMachineBootOptionsBootableDiskDevice{}), "the disk is first again")
		resets := 0
		for _, e := range vaEvents(ctx, getVA(&va)) {
			if strings.HasPrefix(e, afv1.ReasonDiscoveryBootReset+": ") {
				resets++
			}
		}
		Expect(resets).To(Equal(1), "one reset")
		Expect(poolVMs(pool)).To(HaveLen(1), "nothing is created or destroyed")
	})
})

// adminVM is the VM with that instance UUID, seen through a simulator session of the test's own (a
// vSphere user acting by hand), logged out when the spec ends.
func adminVM(ctx context.Context, instanceUUID string) *object.VirtualMachine {
	GinkgoHelper()
	gc, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = gc.Logout(context.Background()) })
	return object.NewVirtualMachine(gc.Client, vc.VMByInstanceUUID(instanceUUID).Self)
}

// powerCycle powers a VM off, waits until the world saw it off (so its next power-on is a boot), and
// powers it on again.
func powerCycle(ctx context.Context, d *world.Driver, vm *object.VirtualMachine, biosUUID string) {
	GinkgoHelper()
	task, err := vm.PowerOff(ctx)
	Expect(err).NotTo(HaveOccurred())
	Expect(task.Wait(ctx)).To(Succeed())
	Eventually(func() bool { return d.HostPoweredOn(biosUUID) }, 30*time.Second, 50*time.Millisecond).Should(BeFalse(), "the world sees the VM off")
	if task, err := vm.PowerOn(ctx); err == nil {
		_ = task.Wait(ctx) // the operator may have powered it on already
	}
	Eventually(func() bool { return d.HostPoweredOn(biosUUID) }, 30*time.Second, 50*time.Millisecond).Should(BeTrue(), "the world sees the VM on")
}

// cdromISOs lists the ISO files in the VM's CD-ROMs.
func cdromISOs(ctx context.Context, vm *object.VirtualMachine) []string {
	GinkgoHelper()
	var m mo.VirtualMachine
	Expect(vm.Properties(ctx, vm.Reference(), []string{"config.hardware.device"}, &m)).To(Succeed())
	var out []string
	for _, dev := range m.Config.Hardware.Device {
		if cd, ok := dev.(*types.VirtualCdrom); ok {
			if b, ok := cd.Backing.(*types.VirtualCdromIsoBackingInfo); ok && b.FileName != "" {
				out = append(out, b.FileName)
			}
		}
	}
	return out
}
