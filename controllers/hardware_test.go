package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/pbm"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// simulatorStoragePolicy is a stock policy of govmomi's storage policy (PBM) simulator.
const simulatorStoragePolicy = "vSAN Default Storage Policy"

func fullHardwareProfile() *afv1.HardwareSpec {
	cores, reservation := int32(2), int64(2048)
	return &afv1.HardwareSpec{
		NumCoresPerSocket: &cores, MemoryReservationMiB: &reservation,
		DataDisks: []afv1.DataDisk{
			{Name: "data", SizeGiB: 5, ProvisioningMode: afv1.ProvisioningThin},
			{Name: "logs", SizeGiB: 3, ProvisioningMode: afv1.ProvisioningThick, Datastore: vcsim.PodDatastore},
			{Name: "etcd", SizeGiB: 2, ProvisioningMode: afv1.ProvisioningEagerlyZeroed},
		},
		StoragePolicyName: simulatorStoragePolicy, NestedHVEnabled: true, EFISecureBootEnabled: true,
		ExtraConfig: map[string]afv1.ExtraConfigValue{"guestinfo.role": "worker", "numa.vcpu.preferHT": "TRUE"},
	}
}

var _ = Describe("Hardware profile", func() {
	It("a pool with every knob of the profile creates a VM carrying all of them, and its VsphereAgent shows the disks and policy", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template.NumCPUs = 4
			p.Spec.Template.Hardware = fullHardwareProfile()
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))

		vas := vsphereAgents(pool)
		Expect(vas).To(HaveLen(1))
		va := vas[0]

		admin, err := vc.Login(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = admin.Logout(context.Background()) })
		policyID, err := func() (string, error) {
			pc, err := pbm.NewClient(ctx, admin.Client)
			if err != nil {
				return "", err
			}
			return pc.ProfileIDByName(ctx, simulatorStoragePolicy)
		}()
		Expect(err).NotTo(HaveOccurred())

		By("the VsphereAgent shows the data disks where they landed and the storage policy")
		hw := va.Status.VM.Hardware
		Expect(hw).NotTo(BeNil())
		Expect(hw.StoragePolicy).To(Equal(simulatorStoragePolicy))
		Expect(hw.StoragePolicyID).To(Equal(policyID))
		Expect(hw.DataDisks).To(Equal([]afv1.DataDiskStatus{
			{Name: "data", SizeGiB: 5, ProvisioningMode: afv1.ProvisioningThin, Datastore: vcsim.Datastore},
			{Name: "logs", SizeGiB: 3, ProvisioningMode: afv1.ProvisioningThick, Datastore: vcsim.PodDatastore},
			{Name: "etcd", SizeGiB: 2, ProvisioningMode: afv1.ProvisioningEagerlyZeroed, Datastore: vcsim.Datastore},
		}))

		By("the VM in vCenter carries every knob")
		dc, err := find.NewFinder(admin.Client, false).Datacenter(ctx, vcsim.Datacenter)
		Expect(err).NotTo(HaveOccurred())
		ref, err := object.NewSearchIndex(admin.Client).FindByUuid(ctx, dc, va.Status.VM.InstanceUUID, true, types.NewBool(true))
		Expect(err).NotTo(HaveOccurred())
		Expect(ref).NotTo(BeNil())
		var vm mo.VirtualMachine
		Expect(object.NewVirtualMachine(admin.Client, ref.Reference()).Properties(ctx, ref.Reference(), []string{"config"}, &vm)).To(Succeed())
		cfg := vm.Config
		Expect(cfg.Hardware.NumCPU).To(BeEquivalentTo(4))
		Expect(cfg.Hardware.NumCoresPerSocket).To(HaveValue(BeEquivalentTo(2)))
		Expect(cfg.MemoryAllocation).NotTo(BeNil())
		Expect(cfg.MemoryAllocation.Reservation).To(HaveValue(BeEquivalentTo(2048)))
		Expect(cfg.NestedHVEnabled).To(HaveValue(BeTrue()))
		Expect(cfg.BootOptions).NotTo(BeNil())
		Expect(cfg.BootOptions.EfiSecureBootEnabled).To(HaveValue(BeTrue()))
		extra := map[string]any{}
		for _, o := range cfg.ExtraConfig {
			extra[o.GetOptionValue().Key] = o.GetOptionValue().Value
		}
		Expect(extra).To(HaveKeyWithValue("guestinfo.role", "worker"))
		Expect(extra).To(HaveKeyWithValue("numa.vcpu.preferHT", "TRUE"))
		Expect(extra).To(HaveKeyWithValue(vsphere.ExtraConfigDiskUUID, "TRUE"))
		var disks []*types.VirtualDisk
		for _, dev := range object.VirtualDeviceList(cfg.Hardware.Device).SelectByType((*types.VirtualDisk)(nil)) {
			disks = append(disks, dev.(*types.VirtualDisk))
		}
		Expect(disks).To(HaveLen(4))
		type shape struct {
			GiB         int64
			Thin, Eager bool
		}
		var got []shape
		for _, disk := range disks {
			b := disk.Backing.(*types.VirtualDiskFlatVer2BackingInfo)
			got = append(got, shape{disk.CapacityInKB / (1024 * 1024), *b.ThinProvisioned, *b.EagerlyScrub})
		}
		root := int64(getPool(pool).Spec.Template.DiskGiB)
		Expect(got).To(ConsistOf(shape{root, true, false}, shape{5, true, false}, shape{3, false, false}, shape{2, false, true}))
	})

	It("a storage policy that does not exist: PlacementValid=False StoragePolicyNotFound, a Warning Event, no VsphereAgent", func(ctx context.Context) {
		_, s, d, pool := startPoolScenario(operatorOptions{}, func(p *afv1.VsphereAgentPool) {
			p.Spec.Template.Hardware = &afv1.HardwareSpec{StoragePolicyName: "Gold (no such policy)"}
		})
		Expect(d.SetReplicas(ctx, s.NodePool, 1)).To(Succeed())
		Eventually(func(g Gomega) {
			p := getPool(pool)
			g.Expect(conditionOf(p.Status.Conditions, afv1.ConditionPlacementValid)).To(Equal("False/" + afv1.ReasonStoragePolicyNotFound))
			g.Expect(p.Status.WaitingAgentMachines).To(BeEquivalentTo(1))
			g.Expect(poolEventReasons(ctx, pool)).To(ContainElement(afv1.ReasonStoragePolicyNotFound))
		}, 90*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(poolEventMessages(ctx, pool)).To(ContainElement(ContainSubstring("Gold (no such policy)")))
		Consistently(func() int { return len(vsphereAgents(pool)) }, 3*time.Second, 250*time.Millisecond).Should(BeZero())

		By("naming a policy that exists, the NodePool is served")
		setPool(pool, func(p *afv1.VsphereAgentPool) { p.Spec.Template.Hardware.StoragePolicyName = simulatorStoragePolicy })
		Eventually(func() int { return boundAgentsOf(pool) }, 60*time.Second, 250*time.Millisecond).Should(Equal(1))
	})
})
