package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// gpuDevice is a passthrough device by vendor and device ID.
func gpuDevice(vendor, device int32, label string) afv1.PCIDeviceSpec {
	return afv1.PCIDeviceSpec{VendorID: &vendor, DeviceID: &device, CustomLabel: label}
}

// vmConfigOf reads the config of va's VM from the simulator.
func vmConfigOf(ctx context.Context, va afv1.VsphereAgent) *types.VirtualMachineConfigInfo {
	GinkgoHelper()
	admin, err := vc.Login(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = admin.Logout(context.Background()) })
	dc, err := find.NewFinder(admin.Client, false).Datacenter(ctx, vcsim.Datacenter)
	Expect(err).NotTo(HaveOccurred())
	ref, err := object.NewSearchIndex(admin.Client).FindByUuid(ctx, dc, va.Status.VM.InstanceUUID, true, types.NewBool(true))
	Expect(err).NotTo(HaveOccurred())
	Expect(ref).NotTo(BeNil())
	var vm mo.VirtualMachine
	Expect(object.NewVirtualMachine(admin.Client, ref.Reference()).Properties(ctx, ref.Reference(), []string{"config"}, &vm)).To(Succeed())
	return vm.Config
}

var _ = Describe("GPUs: PCI passthrough devices and vGPU profiles", func() {
	It("a pool with a vGPU profile and a passthrough GPU creates VMs carrying both, with all their memory reserved", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template.Hardware = &afv1.HardwareSpec{PCIDevices: []afv1.PCIDeviceSpec{
				gpuDevice(vcsim.VendorNVIDIA, vcsim.DeviceTeslaT4, vcsim.T4Label), {VGPUProfile: "grid_t4-4q"},
			}}
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		p := getPool(pool)
		Expect(conditionOf(p.Status.Conditions, afv1.ConditionFailureDomainsAvailable)).To(Equal("True/" + afv1.ReasonAllAvailable))

		By("the VM has a Dynamic DirectPath device allowing the T4 and a vGPU of the profile")
		vas := vsphereAgents(pool)
		Expect(vas).To(HaveLen(1))
		Expect(vas[0].Status.VM.Hardware).NotTo(BeNil())
		Expect(vas[0].Status.VM.Hardware.PCIDevices).To(Equal([]afv1.PCIDeviceStatus{
			{VendorID: vcsim.VendorNVIDIA, DeviceID: vcsim.DeviceTeslaT4, CustomLabel: vcsim.T4Label}, {VGPUProfile: "grid_t4-4q"},
		}))
		cfg := vmConfigOf(ctx, vas[0])
		devs := object.VirtualDeviceList(cfg.Hardware.Device).SelectByType((*types.VirtualPCIPassthrough)(nil))
		Expect(devs).To(HaveLen(2))
		var backings []types.BaseVirtualDeviceBackingInfo
		for _, dev := range devs {
			backings = append(backings, dev.GetVirtualDevice().Backing)
		}
		Expect(backings).To(ConsistOf(
			&types.VirtualPCIPassthroughDynamicBackingInfo{CustomLabel: vcsim.T4Label,
				AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: vcsim.VendorNVIDIA, DeviceId: vcsim.DeviceTeslaT4}}},
			&types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: "grid_t4-4q"},
		))

		By("all of its memory is reserved, locked to its size")
		Expect(cfg.MemoryReservationLockedToMax).To(HaveValue(BeTrue()))
		Expect(cfg.MemoryAllocation).NotTo(BeNil())
		Expect(cfg.MemoryAllocation.Reservation).To(HaveValue(BeEquivalentTo(p.Spec.Template.MemoryMiB)))
		Expect(cfg.Hardware.MemoryMB).To(BeEquivalentTo(p.Spec.Template.MemoryMiB))
	})

	It("a GPU no host offers: FailureDomainsAvailable=False PCIDevicesUnavailable, a Warning Event, no VM; a host offering it later is used", func(ctx context.Context) {
		DeferCleanup(func() { Expect(vc.ResetHostPCIDevices()).To(Succeed()) })
		op, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template.Hardware = &afv1.HardwareSpec{PCIDevices: []afv1.PCIDeviceSpec{
				gpuDevice(vcsim.VendorNVIDIA, vcsim.DeviceA100PCIe, ""), {VGPUProfile: "grid_t4-4q"},
			}}
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionFailureDomainsAvailable)).To(Equal("False/" + afv1.ReasonPCIDevicesUnavailable))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonPCIDevicesUnavailable))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		cond := conditionMessage(getPool(pool), afv1.ConditionFailureDomainsAvailable)
		Expect(cond).To(ContainSubstring("no host of " + vcsim.Cluster + " offers PCI device 10de:20f1"))
		Expect(cond).NotTo(ContainSubstring("grid_t4-4q")) // offered: only what is missing is named
		Expect(poolEventMessages(ctx, pool)).To(ContainElement(ContainSubstring("PCI device 10de:20f1")))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())
		Expect(poolVMs(pool)).To(BeEmpty())

		By("a host sharing a T4 gets an A100 for passthrough: read again within a minute, the VM is created")
		Expect(vc.SetHostPCIDevices("DC0_C0_H1", vcsim.HostPCIDevices{VGPUProfiles: vcsim.T4VGPUProfiles,
			Passthrough: []vcsim.PassthroughDevice{{VendorID: vcsim.VendorNVIDIA, DeviceID: vcsim.DeviceA100PCIe,
				VendorName: "NVIDIA Corporation", DeviceName: "GA100 [A100 PCIe 80GB]", ID: "0000:af:00.0"}}})).To(Succeed())
		op.clock.Step(time.Minute)
		pokePool(pool)
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
		Expect(conditionOf(getPool(pool).Status.Conditions, afv1.ConditionFailureDomainsAvailable)).To(Equal("True/" + afv1.ReasonAllAvailable))
	})
})

// conditionMessage is the message of the pool's condition of type t ("" when absent).
func conditionMessage(p *afv1.VsphereAgentPool, t string) string {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}
