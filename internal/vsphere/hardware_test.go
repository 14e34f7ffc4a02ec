package vsphere_test

import (
	"context"
	"sync"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/pbm"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// simulatorPolicy is a stock storage policy of govmomi's PBM simulator.
const simulatorPolicy = "vSAN Default Storage Policy"

// fullProfile sets every knob of the hardware profile.
func fullProfile() vsphere.Hardware {
	return vsphere.Hardware{
		NumCoresPerSocket: 2, MemoryReservationMiB: 2048, NestedHV: true, SecureBoot: true,
		StoragePolicyName: simulatorPolicy,
		DataDisks: []vsphere.DataDisk{
			{Name: "data", SizeGiB: 5, Provisioning: vsphere.ProvisioningThin},
			{Name: "logs", SizeGiB: 3, Provisioning: vsphere.ProvisioningThick, Datastore: vcsim.Datastore},
			{Name: "etcd", SizeGiB: 2, Provisioning: vsphere.ProvisioningEagerlyZeroed},
		},
		ExtraConfig: map[string]string{"guestinfo.role": "worker", "numa.vcpu.preferHT": "TRUE"},
	}
}

// createCapture records the config of every CreateVM_Task request: the simulator keeps no storage
// policy on the VM, so the policy is asserted on what vCenter was asked.
type createCapture struct {
	mu   sync.Mutex
	cfgs []types.VirtualMachineConfigSpec
}

func (c *createCapture) wrap(next soap.RoundTripper) soap.RoundTripper {
	return vsphere.RoundTripperFunc(func(ctx context.Context, req, res soap.HasFault) error {
		if body, ok := req.(*methods.CreateVM_TaskBody); ok && body.Req != nil {
			c.mu.Lock()
			c.cfgs = append(c.cfgs, body.Req.Config)
			c.mu.Unlock()
		}
		return next.RoundTrip(ctx, req, res)
	})
}

func TestHardwareProfileLandsOnTheVM(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	capture := &createCapture{}
	sessions := vsphere.NewSessions(vsphere.SessionOptions{WrapRoundTripper: capture.wrap, TaskPollInterval: pollInterval})
	t.Cleanup(func() { sessions.Close(context.Background()) })
	c, err := sessions.Get(ctx, h.env.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	owner := newOwner()
	spec := h.env.VMSpec("hw-full", owner)
	spec.ISOPath, spec.NumCPUs, spec.Hardware = isoPath, 4, fullProfile()
	info, err := c.CreateVM(ctx, spec)
	if err != nil {
		t.Fatalf("CreateVM: %v", err)
	}

	admin := adminClient(t, h)
	pc, err := pbm.NewClient(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	wantPolicy, err := pc.ProfileIDByName(ctx, simulatorPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if info.StoragePolicyID != wantPolicy {
		t.Errorf("StoragePolicyID = %q, want %q", info.StoragePolicyID, wantPolicy)
	}

	var vm mo.VirtualMachine
	ref := object.NewVirtualMachine(admin, *vmRef(t, h, owner.OwnerUID))
	if err := ref.Properties(ctx, ref.Reference(), []string{"config"}, &vm); err != nil {
		t.Fatal(err)
	}
	cfg := vm.Config
	if cfg.Hardware.NumCPU != 4 || cfg.Hardware.NumCoresPerSocket == nil || *cfg.Hardware.NumCoresPerSocket != 2 {
		t.Errorf("CPUs %d cores/socket %v, want 4 and 2", cfg.Hardware.NumCPU, cfg.Hardware.NumCoresPerSocket)
	}
	if cfg.MemoryAllocation == nil || cfg.MemoryAllocation.Reservation == nil || *cfg.MemoryAllocation.Reservation != 2048 {
		t.Errorf("memory allocation = %+v, want a 2048 MiB reservation", cfg.MemoryAllocation)
	}
	if cfg.NestedHVEnabled == nil || !*cfg.NestedHVEnabled {
		t.Errorf("nestedHVEnabled = %v", cfg.NestedHVEnabled)
	}
	if cfg.BootOptions == nil || cfg.BootOptions.EfiSecureBootEnabled == nil || !*cfg.BootOptions.EfiSecureBootEnabled {
		t.Errorf("bootOptions = %+v, want secure boot", cfg.BootOptions)
	}
	extra := map[string]string{}
	for _, o := range cfg.ExtraConfig {
		ov := o.GetOptionValue()
		extra[ov.Key], _ = ov.Value.(string)
	}
	if extra["guestinfo.role"] != "worker" || extra["numa.vcpu.preferHT"] != "TRUE" ||
		extra[vsphere.ExtraConfigDiskUUID] != "TRUE" || extra[vsphere.ExtraConfigOwnerUID] != owner.OwnerUID {
		t.Errorf("extraConfig = %v", extra)
	}

	// Disks: boot disk on the datastore cluster's datastore, then the data disks in order, each with its
	// size, provisioning and datastore.
	want := []vsphere.Disk{
		{SizeGiB: 20, Datastore: vcsim.PodDatastore, Thin: true},
		{SizeGiB: 5, Datastore: vcsim.PodDatastore, Thin: true},
		{SizeGiB: 3, Datastore: vcsim.Datastore},
		{SizeGiB: 2, Datastore: vcsim.PodDatastore, EagerlyScrub: true},
	}
	if len(info.Disks) != len(want) {
		t.Fatalf("disks = %+v, want %d", info.Disks, len(want))
	}
	for i, w := range want {
		got := info.Disks[i]
		if got.SizeGiB != w.SizeGiB || got.Datastore != w.Datastore || got.Thin != w.Thin || got.EagerlyScrub != w.EagerlyScrub {
			t.Errorf("disk %d = %+v, want %+v", i, got, w)
		}
	}
	if info.DiskGiB != 20 {
		t.Errorf("DiskGiB = %d, want the boot disk's 20", info.DiskGiB)
	}

	// A retry after a crash adopts the VM and still reports the policy it carries.
	again, err := c.CreateVM(ctx, spec)
	if err != nil || !again.Adopted || again.StoragePolicyID != wantPolicy || len(again.Disks) != 4 {
		t.Fatalf("retry: %+v %v, want the VM adopted with policy %s and 4 disks", again, err, wantPolicy)
	}

	// The storage policy was asked for on the VM home and on every disk created.
	capture.mu.Lock()
	defer capture.mu.Unlock()
	if len(capture.cfgs) != 1 {
		t.Fatalf("%d CreateVM_Task requests, want 1", len(capture.cfgs))
	}
	sent := capture.cfgs[0]
	if !definesProfile(sent.VmProfile, wantPolicy) {
		t.Errorf("VM home profile = %+v, want %s", sent.VmProfile, wantPolicy)
	}
	disks := 0
	for _, ch := range sent.DeviceChange {
		s := ch.GetVirtualDeviceConfigSpec()
		if _, ok := s.Device.(*types.VirtualDisk); ok {
			disks++
			if !definesProfile(s.Profile, wantPolicy) {
				t.Errorf("disk %d profile = %+v, want %s", s.Device.GetVirtualDevice().Key, s.Profile, wantPolicy)
			}
		}
	}
	if disks != 4 {
		t.Errorf("%d disks requested, want 4", disks)
	}
}

func TestNoHardwareProfileKeepsTheVMAsBefore(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	info := h.createVM(t, "hw-none", owner)
	var vm mo.VirtualMachine
	ref := object.NewVirtualMachine(adminClient(t, h), *vmRef(t, h, owner.OwnerUID))
	if err := ref.Properties(ctx, ref.Reference(), []string{"config"}, &vm); err != nil {
		t.Fatal(err)
	}
	if len(info.Disks) != 1 || info.StoragePolicyID != "" {
		t.Errorf("disks %+v policy %q, want the boot disk only and no policy", info.Disks, info.StoragePolicyID)
	}
	if vm.Config.NestedHVEnabled != nil && *vm.Config.NestedHVEnabled {
		t.Errorf("nested virtualization on without a profile")
	}
	if b := vm.Config.BootOptions; b != nil && b.EfiSecureBootEnabled != nil && *b.EfiSecureBootEnabled {
		t.Errorf("secure boot on without a profile")
	}
	if a := vm.Config.MemoryAllocation; a != nil && a.Reservation != nil && *a.Reservation != 0 {
		t.Errorf("memory reserved without a profile: %d", *a.Reservation)
	}
}

func TestHardwareProfileRefusals(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	for name, edit := range map[string]func(*vsphere.VMSpec){
		"unknown storage policy":       func(s *vsphere.VMSpec) { s.Hardware.StoragePolicyName = "Gold (missing)" },
		"extraConfig ownership marker": func(s *vsphere.VMSpec) { s.Hardware.ExtraConfig = map[string]string{vsphere.ExtraConfigOwnerUID: "x"} },
		"extraConfig disk.EnableUUID":  func(s *vsphere.VMSpec) { s.Hardware.ExtraConfig = map[string]string{"disk.EnableUUID": "FALSE"} },
		"extraConfig msg.autoanswer":   func(s *vsphere.VMSpec) { s.Hardware.ExtraConfig = map[string]string{"msg.autoanswer": "TRUE"} },
		"cores not dividing CPUs":      func(s *vsphere.VMSpec) { s.Hardware.NumCoresPerSocket = 3 },
		"reservation above memory":     func(s *vsphere.VMSpec) { s.Hardware.MemoryReservationMiB = s.MemoryMiB + 4 },
		"secure boot on bios":          func(s *vsphere.VMSpec) { s.Firmware, s.Hardware.SecureBoot = "bios", true },
		"unknown provisioning mode": func(s *vsphere.VMSpec) {
			s.Hardware.DataDisks = []vsphere.DataDisk{{Name: "d", SizeGiB: 1, Provisioning: "Sparse"}}
		},
		"data disk on a missing datastore": func(s *vsphere.VMSpec) {
			s.Hardware.DataDisks = []vsphere.DataDisk{{Name: "d", SizeGiB: 1, Datastore: "NoSuchDS"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			owner := newOwner()
			spec := h.env.VMSpec("hw-refused", owner)
			spec.ISOPath = isoPath
			edit(&spec)
			_, err := h.client.CreateVM(ctx, spec)
			wantClass(t, err, vsphere.ClassInvalid)
			if h.env.VMByInstanceUUID(owner.OwnerUID) != nil {
				t.Fatalf("a VM was created")
			}
		})
	}
}

func definesProfile(specs []types.BaseVirtualMachineProfileSpec, id string) bool {
	for _, s := range specs {
		if d, ok := s.(*types.VirtualMachineDefinedProfileSpec); ok && d.ProfileId == id {
			return true
		}
	}
	return false
}

// vmRef finds the VM by instance UUID through the admin session.
func vmRef(t *testing.T, h *harness, instanceUUID string) *types.ManagedObjectReference {
	t.Helper()
	ctx := testContext(t)
	admin := adminClient(t, h)
	dc, err := find.NewFinder(admin, false).Datacenter(ctx, vcsim.Datacenter)
	if err != nil {
		t.Fatal(err)
	}
	instance := true
	res, err := methods.FindByUuid(ctx, admin, &types.FindByUuid{This: *admin.ServiceContent.SearchIndex,
		Datacenter: types.NewReference(dc.Reference()), Uuid: instanceUUID, VmSearch: true, InstanceUuid: &instance})
	if err != nil || res.Returnval == nil {
		t.Fatalf("VM %s not found: %v", instanceUUID, err)
	}
	return res.Returnval
}

func TestPlacementChecksTheProfilesPolicyAndDatastores(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	base := vsphere.PlacementSpec{Datacenter: vcsim.Datacenter, DatastoreCluster: vcsim.DatastoreCluster, ISODatastore: vcsim.Datastore,
		ResourcePool: vcsim.ResourcePool, Folder: vcsim.Folder, Network: vcsim.Network}

	ok := base
	ok.StoragePolicy, ok.DataDiskDatastores = simulatorPolicy, []string{vcsim.Datastore}
	if problems, err := h.client.CheckPlacement(ctx, ok); err != nil || len(problems) != 0 {
		t.Fatalf("existing policy and datastore: problems %+v, err %v", problems, err)
	}

	bad := base
	bad.StoragePolicy, bad.DataDiskDatastores = "Gold", []string{"NoSuchDS"}
	problems, err := h.client.CheckPlacement(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || problems[0].Kind != vsphere.PlacementDatastore || problems[0].Name != "NoSuchDS" ||
		problems[1].Kind != vsphere.PlacementStoragePolicy || problems[1].Name != "Gold" {
		t.Fatalf("problems = %+v, want the data disk datastore, then the storage policy", problems)
	}
}
