package vsphere

import (
	"context"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A worker must boot its installed disk, not the discovery ISO that may still be in its CD-ROM: a host
// that boots discovery again after installation stalls at assisted-service's
// installing-pending-user-action. An explicit boot order [boot disk, CD-ROM] does both jobs (vSphere
// API reference, VirtualMachineBootOptions.bootOrder: the firmware tries the listed devices in turn and
// the next one when a device fails to boot): the blank disk of a new VM fails, so its first boot starts
// the discovery ISO; once installed, the disk boots. A disk entry names its device key, which vCenter
// assigns at creation, so the order is set by a reconfigure after the VM exists. It is set after the
// first power-on, from the read that sees the power-on done: the first boot is of a blank disk and
// falls through to the CD-ROM whatever the order, and the read saves a round trip.

// bootDiskKey is the device key of the boot disk (the first disk by controller and unit), if any.
func bootDiskKey(devices object.VirtualDeviceList) (int32, bool) {
	disks := disksOf(devices)
	if len(disks) == 0 {
		return 0, false
	}
	return disks[0].Key, true
}

// bootsDiskFirst reports whether the VM's boot order starts with its boot disk.
func bootsDiskFirst(vm *mo.VirtualMachine) bool {
	if vm == nil || vm.Config == nil {
		return false
	}
	key, ok := bootDiskKey(vm.Config.Hardware.Device)
	o := vm.Config.BootOptions
	if !ok || o == nil || len(o.BootOrder) == 0 {
		return false
	}
	d, isDisk := o.BootOrder[0].(*types.VirtualMachineBootOptionsBootableDiskDevice)
	return isDisk && d.DeviceKey == key
}

// diskFirstBootOptions is the VM's boot options with the boot order [boot disk, CD-ROM]. The other options
// (EFI secure boot, delays) are carried over as read, whether or not the server would keep the fields a
// reconfigure leaves unset.
func diskFirstBootOptions(current *types.VirtualMachineBootOptions, diskKey int32) *types.VirtualMachineBootOptions {
	o := types.VirtualMachineBootOptions{}
	if current != nil {
		o = *current
	}
	o.BootOrder = []types.BaseVirtualMachineBootOptionsBootableDevice{
		&types.VirtualMachineBootOptionsBootableDiskDevice{DeviceKey: diskKey},
		&types.VirtualMachineBootOptionsBootableCdromDevice{},
	}
	return &o
}

// ensureDiskFirstBoot sets the boot order [boot disk, CD-ROM] on a VM whose order does not start with its
// boot disk, and waits for the reconfigure. vm is a fresh read of the VM (vmProps) whose identity the
// caller verified; a VM without a disk is left alone.
func (c *client) ensureDiskFirstBoot(ctx context.Context, ref types.ManagedObjectReference, vm *mo.VirtualMachine) error {
	if bootsDiskFirst(vm) || vm.Config == nil {
		return nil
	}
	key, ok := bootDiskKey(vm.Config.Hardware.Device)
	if !ok {
		return nil
	}
	t, err := object.NewVirtualMachine(c.vim, ref).Reconfigure(ctx, types.VirtualMachineConfigSpec{BootOptions: diskFirstBootOptions(vm.Config.BootOptions, key)})
	if err != nil {
		return err
	}
	if _, err := c.waitTaskOf(ctx, "BootOrder", t.Reference()); err != nil {
		return err
	}
	c.log.V(1).Info("set the boot order to disk first", "vm", vm.Name, "diskKey", key)
	return nil
}
