package vsphere_test

import (
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// bootOrderOf reads config.bootOptions.bootOrder and the first disk's device key as vCenter holds them.
func bootOrderOf(t *testing.T, h *harness, instanceUUID string) ([]types.BaseVirtualMachineBootOptionsBootableDevice, int32) {
	t.Helper()
	c := adminClient(t, h)
	vm := object.NewVirtualMachine(c, h.env.VMByInstanceUUID(instanceUUID).Self)
	var m mo.VirtualMachine
	if err := vm.Properties(testContext(t), vm.Reference(), []string{"config.bootOptions", "config.hardware.device"}, &m); err != nil {
		t.Fatal(err)
	}
	disks := object.VirtualDeviceList(m.Config.Hardware.Device).SelectByType((*types.VirtualDisk)(nil))
	if len(disks) == 0 {
		t.Fatal("the VM has no disk")
	}
	if m.Config.BootOptions == nil {
		return nil, disks[0].GetVirtualDevice().Key
	}
	return m.Config.BootOptions.BootOrder, disks[0].GetVirtualDevice().Key
}

// wantDiskFirst: the boot order is [boot disk (by its vCenter-assigned key), CD-ROM].
func wantDiskFirst(t *testing.T, h *harness, instanceUUID string) {
	t.Helper()
	order, diskKey := bootOrderOf(t, h, instanceUUID)
	if len(order) != 2 {
		t.Fatalf("boot order %#v, want [disk %d, CD-ROM]", order, diskKey)
	}
	d, ok := order[0].(*types.VirtualMachineBootOptionsBootableDiskDevice)
	if !ok || d.DeviceKey != diskKey {
		t.Fatalf("first boot device %#v, want the boot disk (key %d)", order[0], diskKey)
	}
	if _, ok := order[1].(*types.VirtualMachineBootOptionsBootableCdromDevice); !ok {
		t.Fatalf("second boot device %#v, want the CD-ROM", order[1])
	}
}

// putCDROMFirst sets the boot order to the CD-ROM alone, as a user in vCenter would.
func putCDROMFirst(t *testing.T, h *harness, instanceUUID string) {
	t.Helper()
	ctx := testContext(t)
	vm := object.NewVirtualMachine(adminClient(t, h), h.env.VMByInstanceUUID(instanceUUID).Self)
	task, err := vm.Reconfigure(ctx, types.VirtualMachineConfigSpec{BootOptions: &types.VirtualMachineBootOptions{
		BootOrder: []types.BaseVirtualMachineBootOptionsBootableDevice{&types.VirtualMachineBootOptionsBootableCdromDevice{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// wantFoundDiskFirst: FindVM reports the VM's disk-first order.
func wantFoundDiskFirst(t *testing.T, h *harness, info *vsphere.VMInfo) {
	t.Helper()
	found, err := h.client.FindVM(testContext(t), vcsim.Datacenter, info.InstanceUUID, info.BIOSUUID)
	if err != nil {
		t.Fatal(err)
	}
	if !found.DiskFirstBoot {
		t.Errorf("FindVM reported DiskFirstBoot=false on a disk-first VM")
	}
}

// eventuallyDiskFirst waits (bounded) until vCenter holds the order [boot disk, CD-ROM]: CreateVM starts
// that reconfigure without waiting for it.
func eventuallyDiskFirst(t *testing.T, h *harness, instanceUUID string) {
	t.Helper()
	for range 200 {
		if order, key := bootOrderOf(t, h, instanceUUID); len(order) == 2 {
			if d, ok := order[0].(*types.VirtualMachineBootOptionsBootableDiskDevice); ok && d.DeviceKey == key {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantDiskFirst(t, h, instanceUUID)
}

// TestCreatedVMBootsItsDiskFirst: a new VM boots its disk before the CD-ROM, so an installed worker never
// boots the discovery ISO again (its blank disk fails to boot the first time and the CD-ROM starts).
// CreateVM starts that reconfigure and does not poll it (DiskFirstBoot stays false until a read sees it).
func TestCreatedVMBootsItsDiskFirst(t *testing.T) {
	h := newHarness(t)
	h.uploadISO(t, isoPath)
	info := h.createVM(t, "boot-order-a", newOwner())
	eventuallyDiskFirst(t, h, info.InstanceUUID)
	wantFoundDiskFirst(t, h, info)
}

// TestSetDiskFirstBootProvesTheVMFirst: SetDiskFirstBoot (the VM checks' repair of a VM found not booting
// its disk first) refuses a VM whose BIOS UUID is not the recorded one and a foreign owner, changing
// nothing; for the VM we made it puts the disk first and says so, and a second call changes nothing.
func TestSetDiskFirstBootProvesTheVMFirst(t *testing.T) {
	h := newHarness(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	info := h.createVM(t, "boot-order-c", owner)
	eventuallyDiskFirst(t, h, info.InstanceUUID)
	ctx := testContext(t)
	putCDROMFirst(t, h, info.InstanceUUID)

	_, err := h.client.SetDiskFirstBoot(ctx, vcsim.Datacenter, info.InstanceUUID, newOwner().OwnerUID, owner)
	wantClass(t, err, vsphere.ClassOwnership)
	foreign := owner
	foreign.OwnerUID = newOwner().OwnerUID
	_, err = h.client.SetDiskFirstBoot(ctx, vcsim.Datacenter, info.InstanceUUID, info.BIOSUUID, foreign)
	wantClass(t, err, vsphere.ClassOwnership)
	if order, _ := bootOrderOf(t, h, info.InstanceUUID); len(order) != 1 {
		t.Fatalf("a refused call changed the boot order to %#v", order)
	}

	changed, err := h.client.SetDiskFirstBoot(ctx, vcsim.Datacenter, info.InstanceUUID, info.BIOSUUID, owner)
	if err != nil || !changed {
		t.Fatalf("SetDiskFirstBoot = %v, %v; want true, nil", changed, err)
	}
	wantDiskFirst(t, h, info.InstanceUUID)
	if changed, err := h.client.SetDiskFirstBoot(ctx, vcsim.Datacenter, info.InstanceUUID, info.BIOSUUID, owner); err != nil || changed {
		t.Fatalf("second SetDiskFirstBoot = %v, %v; want false, nil", changed, err)
	}
}

// TestAdoptionSetsAMissingBootOrder: a crash between the power-on and the boot order leaves a running VM
// the firmware may boot from its CD-ROM; the retry that adopts it sets the order.
func TestAdoptionSetsAMissingBootOrder(t *testing.T) {
	h := newHarness(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	first := h.createVM(t, "boot-order-b", owner)
	eventuallyDiskFirst(t, h, first.InstanceUUID) // the reconfigure CreateVM started, before the test's own
	putCDROMFirst(t, h, first.InstanceUUID)
	if order, _ := bootOrderOf(t, h, first.InstanceUUID); len(order) != 1 {
		t.Fatalf("setup: boot order %#v, want the CD-ROM alone", order)
	}

	again := h.createVM(t, "boot-order-b", owner)
	if !again.Adopted || !again.DiskFirstBoot {
		t.Fatalf("retry: adopted=%v diskFirst=%v, want both", again.Adopted, again.DiskFirstBoot)
	}
	wantDiskFirst(t, h, first.InstanceUUID)
	wantFoundDiskFirst(t, h, first) // found again (FindVM), the VM reports its order
}

// TestResetVMProvesTheHostFirst: ResetVM refuses a VM whose BIOS UUID is not the recorded one and a foreign
// owner (nothing changes: same boot time, same boot order); for the VM we made it puts the disk first again
// and restarts it (a new boot time).
func TestResetVMProvesTheHostFirst(t *testing.T) {
	h := newHarness(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	info := h.createVM(t, "reset-a", owner)
	eventuallyDiskFirst(t, h, info.InstanceUUID)
	ctx := testContext(t)
	c := adminClient(t, h)
	vm := object.NewVirtualMachine(c, h.env.VMByInstanceUUID(info.InstanceUUID).Self)
	bootTime := func() time.Time {
		t.Helper()
		var m mo.VirtualMachine
		if err := vm.Properties(ctx, vm.Reference(), []string{"summary.runtime.bootTime"}, &m); err != nil {
			t.Fatal(err)
		}
		if m.Summary.Runtime.BootTime == nil {
			t.Fatal("no boot time")
		}
		return *m.Summary.Runtime.BootTime
	}
	putCDROMFirst(t, h, info.InstanceUUID)
	booted := bootTime()

	wantClass(t, h.client.ResetVM(ctx, vcsim.Datacenter, info.InstanceUUID, newOwner().OwnerUID, owner), vsphere.ClassOwnership)
	foreign := owner
	foreign.OwnerUID = newOwner().OwnerUID
	wantClass(t, h.client.ResetVM(ctx, vcsim.Datacenter, info.InstanceUUID, info.BIOSUUID, foreign), vsphere.ClassOwnership)
	if order, _ := bootOrderOf(t, h, info.InstanceUUID); len(order) != 1 || !bootTime().Equal(booted) {
		t.Fatalf("a refused reset changed the VM: boot order %#v, boot time %s (was %s)", order, bootTime(), booted)
	}

	if err := h.client.ResetVM(ctx, vcsim.Datacenter, info.InstanceUUID, info.BIOSUUID, owner); err != nil {
		t.Fatal(err)
	}
	wantDiskFirst(t, h, info.InstanceUUID)
	if !bootTime().After(booted) {
		t.Errorf("boot time %s after the reset, was %s: no restart", bootTime(), booted)
	}
	wantClass(t, h.client.ResetVM(ctx, vcsim.Datacenter, newOwner().OwnerUID, info.BIOSUUID, owner), vsphere.ClassNotFound)
}
