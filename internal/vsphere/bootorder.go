package vsphere

import (
	"context"
	"strings"

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
// falls through to the CD-ROM whatever the order, and the read saves a round trip. CreateVM does not
// wait for that reconfigure (a poll per VM saved): the VM's periodic check reads the order with the rest
// of the VM and sets it again where it is missing (SetDiskFirstBoot), long before an installed worker
// reboots (a VM is checked every two minutes; a host registers, validates, binds and installs first).

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
// boot disk and, with wait, waits for the reconfigure. vm is a fresh read of the VM (vmProps) whose
// identity the caller verified; a VM without a disk is left alone. It reports whether the VM is known to
// boot its disk first now: without wait, a reconfigure just started is not known to have succeeded.
func (c *client) ensureDiskFirstBoot(ctx context.Context, ref types.ManagedObjectReference, vm *mo.VirtualMachine, wait bool) (bool, error) {
	if bootsDiskFirst(vm) {
		return true, nil
	}
	if vm.Config == nil {
		return false, nil
	}
	key, ok := bootDiskKey(vm.Config.Hardware.Device)
	if !ok {
		return false, nil
	}
	t, err := object.NewVirtualMachine(c.vim, ref).Reconfigure(ctx, types.VirtualMachineConfigSpec{BootOptions: diskFirstBootOptions(vm.Config.BootOptions, key)})
	if err != nil {
		return false, err
	}
	if !wait {
		c.log.V(1).Info("setting the boot order to disk first", "vm", vm.Name, "diskKey", key, "task", t.Reference().Value)
		return false, nil
	}
	if _, err := c.waitTaskOf(ctx, "BootOrder", t.Reference()); err != nil {
		return false, err
	}
	c.log.V(1).Info("set the boot order to disk first", "vm", vm.Name, "diskKey", key)
	return true, nil
}

// SetDiskFirstBoot makes an owned VM (marker, instance UUID and BIOS UUID verified, as ResetVM) boot its
// disk first and waits for the reconfigure; a VM that already does, or has no disk, is left alone. It
// reports whether it changed the order. Absent is a NotFound error.
func (c *client) SetDiskFirstBoot(ctx context.Context, datacenter, instanceUUID, biosUUID string, owner Ownership) (bool, error) {
	changed, err := c.setDiskFirstBoot(ctx, datacenter, instanceUUID, biosUUID, owner)
	return changed, observe("bootorder", err)
}

func (c *client) setDiskFirstBoot(ctx context.Context, datacenter, instanceUUID, biosUUID string, owner Ownership) (bool, error) {
	ref, vm, err := c.ownedHost(ctx, "SetDiskFirstBoot", datacenter, instanceUUID, biosUUID, owner)
	if err != nil {
		return false, err
	}
	if bootsDiskFirst(vm) {
		return false, nil
	}
	return c.ensureDiskFirstBoot(ctx, *ref, vm, true)
}

// ResetVM recovers a worker that booted its discovery image instead of its installed disk: after proving
// the VM is the one we made (marker, instance UUID = owner UID, no template) and the host we know (BIOS
// UUID), it makes the VM boot its disk first and resets it, so the next boot starts the installed disk. A
// powered-off VM is powered on instead (it boots the same way). Absent is a NotFound error.
func (c *client) ResetVM(ctx context.Context, datacenter, instanceUUID, biosUUID string, owner Ownership) error {
	return observe("reset", c.resetVM(ctx, datacenter, instanceUUID, biosUUID, owner))
}

func (c *client) resetVM(ctx context.Context, datacenter, instanceUUID, biosUUID string, owner Ownership) error {
	ref, vm, err := c.ownedHost(ctx, "ResetVM", datacenter, instanceUUID, biosUUID, owner)
	if err != nil {
		return err
	}
	if _, err := c.ensureDiskFirstBoot(ctx, *ref, vm, true); err != nil {
		return err
	}
	machine := object.NewVirtualMachine(c.vim, *ref)
	kind, start := "Reset", machine.Reset
	if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		kind, start = "PowerOn", machine.PowerOn
	}
	t, err := start(ctx)
	if err == nil {
		_, err = c.waitTaskOf(ctx, kind, t.Reference())
	}
	if err != nil {
		return err
	}
	c.log.Info("reset VM to boot its installed disk", "vm", vm.Name, "instanceUUID", instanceUUID, "operation", kind)
	return nil
}

// ownedHost reads an owned VM (ownedVM: marker, instance UUID = owner UID, no template) and proves it is
// the host we know: its BIOS UUID is the recorded one. For the operations that change how a host boots.
func (c *client) ownedHost(ctx context.Context, op, datacenter, instanceUUID, biosUUID string, owner Ownership) (*types.ManagedObjectReference, *mo.VirtualMachine, error) {
	ref, vm, err := c.ownedVM(ctx, op, datacenter, instanceUUID, owner, vmProps)
	if err != nil {
		return nil, nil, err
	}
	if vm.Config == nil || !strings.EqualFold(vm.Config.Uuid, biosUUID) {
		return nil, nil, NewError(ClassOwnership, op, "VM %q has BIOS UUID %q, not the recorded %q", vm.Name, configUUID(vm), biosUUID)
	}
	return ref, vm, nil
}

// configUUID is the VM's BIOS UUID, or "" when its config was not read.
func configUUID(vm *mo.VirtualMachine) string {
	if vm.Config == nil {
		return ""
	}
	return vm.Config.Uuid
}
