package vsphere_test

import (
	"slices"
	"sort"
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func TestVMLifecycleWithEveryKnob(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()

	info := h.createVM(t, "hc1-worker-a", owner)
	if info.InstanceUUID != owner.OwnerUID || info.BIOSUUID == "" || info.MACAddress == "" || !info.PoweredOn {
		t.Fatalf("identity not read back: %+v", info)
	}
	if info.Ownership != owner {
		t.Fatalf("ownership marker = %+v, want %+v", info.Ownership, owner)
	}
	if info.NumCPUs != 2 || info.MemoryMiB != 4096 || info.DiskGiB != 20 {
		t.Fatalf("sizes = %d CPU %d MiB %d GiB", info.NumCPUs, info.MemoryMiB, info.DiskGiB)
	}
	if len(info.CDROMs) != 1 || info.CDROMs[0].ISOPath != isoPath || !info.CDROMs[0].Connected {
		t.Fatalf("CD-ROMs = %+v", info.CDROMs)
	}

	// What vCenter holds: knobs, disk.EnableUUID, folder, datastore cluster placement, tags.
	admin, err := h.env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Logout(ctx) }()
	finder := find.NewFinder(admin.Client, false)
	vmObj, err := finder.VirtualMachine(ctx, "/DC0/vm/"+vcsim.Folder+"/hc1-worker-a")
	if err != nil {
		t.Fatalf("VM not in folder %s: %v", vcsim.Folder, err)
	}
	var vm mo.VirtualMachine
	if err := vmObj.Properties(ctx, vmObj.Reference(), []string{"config", "datastore"}, &vm); err != nil {
		t.Fatal(err)
	}
	if vm.Config.GuestId != "rhel9_64Guest" || vm.Config.Firmware != "efi" {
		t.Errorf("guest %q firmware %q", vm.Config.GuestId, vm.Config.Firmware)
	}
	extra := map[string]string{}
	for _, o := range vm.Config.ExtraConfig {
		ov := o.GetOptionValue()
		extra[ov.Key], _ = ov.Value.(string)
	}
	if extra[vsphere.ExtraConfigDiskUUID] != "TRUE" || extra[vsphere.ExtraConfigOwnerUID] != owner.OwnerUID {
		t.Errorf("extraConfig = %v", extra)
	}
	var sawPVSCSI, sawVmxnet3, sawThin bool
	for _, d := range vm.Config.Hardware.Device {
		switch dev := d.(type) {
		case *types.ParaVirtualSCSIController:
			sawPVSCSI = true
		case *types.VirtualVmxnet3:
			sawVmxnet3 = true
		case *types.VirtualDisk:
			b := dev.Backing.(*types.VirtualDiskFlatVer2BackingInfo)
			sawThin = b.ThinProvisioned != nil && *b.ThinProvisioned
			if b.Datastore == nil {
				t.Errorf("disk has no datastore")
			}
		}
	}
	if !sawPVSCSI || !sawVmxnet3 || !sawThin {
		t.Errorf("devices: pvscsi=%v vmxnet3=%v thin=%v", sawPVSCSI, sawVmxnet3, sawThin)
	}
	podDS, err := finder.Datastore(ctx, "/DC0/datastore/"+vcsim.DatastoreCluster+"/"+vcsim.PodDatastore)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(vm.Datastore, podDS.Reference()) {
		t.Errorf("VM on %v, want the datastore cluster's %s", vm.Datastore, vcsim.PodDatastore)
	}
	tags, err := h.env.AttachedTags(ctx, vmObj.Reference())
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tags)
	if !slices.Equal(tags, []string{"agent", "worker"}) {
		t.Errorf("tags = %v", tags)
	}

	// Find by instance UUID, by BIOS UUID alone; absent is NotFound.
	if got, err := h.client.FindVM(ctx, vcsim.Datacenter, owner.OwnerUID, ""); err != nil || got.BIOSUUID != info.BIOSUUID {
		t.Fatalf("FindVM by instance UUID: %+v %v", got, err)
	}
	if got, err := h.client.FindVM(ctx, vcsim.Datacenter, "", info.BIOSUUID); err != nil || got.InstanceUUID != owner.OwnerUID {
		t.Fatalf("FindVM by BIOS UUID: %+v %v", got, err)
	}
	_, err = h.client.FindVM(ctx, vcsim.Datacenter, newOwner().OwnerUID, "")
	wantClass(t, err, vsphere.ClassNotFound)

	// ListPoolVMs by marker: ours only, foreign stock VMs excluded.
	listed, err := h.client.ListPoolVMs(ctx, vcsim.Datacenter, owner.PoolUID)
	if err != nil || len(listed) != 1 || listed[0].InstanceUUID != owner.OwnerUID {
		t.Fatalf("ListPoolVMs = %+v %v", listed, err)
	}
	if other, err := h.client.ListPoolVMs(ctx, vcsim.Datacenter, "other-pool"); err != nil || len(other) != 0 {
		t.Fatalf("other pool lists %+v %v", other, err)
	}

	// Destroy refuses another owner, then destroys; absent is success.
	wrong := owner
	wrong.OwnerUID = newOwner().OwnerUID
	wantClass(t, h.client.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, wrong), vsphere.ClassOwnership)
	if err := h.client.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner); err != nil {
		t.Fatalf("DestroyVM: %v", err)
	}
	if n := h.env.CountVMsNamed("hc1-worker-a"); n != 0 {
		t.Fatalf("%d VMs left after destroy", n)
	}
	if err := h.client.DestroyVM(ctx, vcsim.Datacenter, owner.OwnerUID, owner); err != nil {
		t.Fatalf("DestroyVM of an absent VM: %v", err)
	}
}

func TestCreateVMIsIdempotentAfterCrash(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	first := h.createVM(t, "hc1-worker-b", owner)

	// The caller "forgets" (crash before writing status) and retries, even from a new process/session.
	again := h.createVM(t, "hc1-worker-b", owner)
	fresh, err := vsphere.NewSessions(vsphere.SessionOptions{}).Get(ctx, h.env.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	spec := h.env.VMSpec("hc1-worker-b", owner)
	spec.ISOPath = isoPath
	third, err := fresh.CreateVM(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if first.Adopted {
		t.Fatalf("a freshly created VM is reported as adopted")
	}
	for _, got := range []*vsphere.VMInfo{again, third} {
		if got.BIOSUUID != first.BIOSUUID || got.MACAddress != first.MACAddress || !got.Adopted {
			t.Fatalf("retry returned another VM, or did not say it adopted one: %+v vs %+v", got, first)
		}
	}
	if n := h.env.CountVMsNamed("hc1-worker-b"); n != 1 {
		t.Fatalf("%d VMs after retries, want 1", n)
	}
}

func TestForeignVMIsNeverTouched(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	admin, err := h.env.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Logout(ctx) }()
	vmObj, err := find.NewFinder(admin.Client, false).VirtualMachine(ctx, "/DC0/vm/DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	var before mo.VirtualMachine
	if err := vmObj.Properties(ctx, vmObj.Reference(), []string{"config.instanceUuid", "runtime.powerState"}, &before); err != nil {
		t.Fatal(err)
	}
	owner := newOwner()

	// Same name, same folder, without our instance UUID: vCenter answers DuplicateName (the simulator
	// does not check names, so the rule plays vCenter); the VM is refused, never adopted.
	h.env.Service().AddFaultRule(&simulator.FaultInjectionRule{MethodName: "CreateVM_Task", ObjectType: "*",
		ObjectName: "*", Probability: 1, FaultType: simulator.FaultTypeCustom, Fault: &types.DuplicateName{Name: "DC0_H0_VM0"}, Enabled: true})
	spec := h.env.VMSpec("DC0_H0_VM0", owner)
	spec.Folder = ""
	_, err = h.client.CreateVM(ctx, spec)
	wantClass(t, err, vsphere.ClassDuplicateName)
	if !vsphere.IsPermanentCreateError(err) {
		t.Fatalf("DuplicateName must be permanent for that name: %v", err)
	}
	h.env.Service().ClearFaultRules()

	// Destroy by its UUID with our ownership: refused.
	wantClass(t, h.client.DestroyVM(ctx, vcsim.Datacenter, before.Config.InstanceUuid, owner), vsphere.ClassOwnership)
	_, err = h.client.EjectISO(ctx, vsphere.EjectRequest{Datacenter: vcsim.Datacenter, InstanceUUID: before.Config.InstanceUuid,
		Ownership: owner, DeviceKey: 3000, ExpectedISOPath: isoPath})
	wantClass(t, err, vsphere.ClassOwnership)

	var after mo.VirtualMachine
	if err := vmObj.Properties(ctx, vmObj.Reference(), []string{"config.instanceUuid", "runtime.powerState"}, &after); err != nil {
		t.Fatalf("foreign VM gone: %v", err)
	}
	if after.Runtime.PowerState != before.Runtime.PowerState || h.env.CountVMsNamed("DC0_H0_VM0") != 1 {
		t.Fatalf("foreign VM changed: %s -> %s", before.Runtime.PowerState, after.Runtime.PowerState)
	}
}
