package vsphere

import (
	"context"
	"sort"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// extraConfig keys of the ownership marker (SPEC §4). The owner UID is also the VM's instance UUID.
const (
	ExtraConfigOwnerUID = "agent-forge.owner-uid"
	ExtraConfigOwner    = "agent-forge.owner"
	ExtraConfigPoolUID  = "agent-forge.pool-uid"
	ExtraConfigPool     = "agent-forge.pool"
	// ExtraConfigDiskUUID makes the guest see disk serial numbers; the Assisted Installer requires it.
	ExtraConfigDiskUUID = "disk.EnableUUID"
)

// vmProps are the properties read for a VMInfo, in one retrieval.
var vmProps = []string{
	"name", "config.uuid", "config.instanceUuid", "config.extraConfig", "config.hardware.device",
	"config.hardware.numCPU", "config.hardware.memoryMB", "config.template", "config.bootOptions", "runtime.powerState",
	"runtime.question", "parent",
}

// guardProps are what a changing call reads to prove the VM's identity (verifyIdentity) and power state.
var guardProps = []string{"name", "config.extraConfig", "config.instanceUuid", "config.template", "runtime.powerState"}

// readVM reads a VM's identity, marker, devices and pending question with one property retrieval.
func (c *client) readVM(ctx context.Context, ref types.ManagedObjectReference) (*mo.VirtualMachine, error) {
	var vm mo.VirtualMachine
	if err := c.pc().RetrieveOne(ctx, ref, vmProps, &vm); err != nil {
		return nil, err
	}
	return &vm, nil
}

// findRef looks a VM up by instance UUID (vmSearch) within the datacenter; nil when absent.
func (c *client) findRef(ctx context.Context, d *dcCache, uuid string, instance bool) (*types.ManagedObjectReference, error) {
	if uuid == "" {
		return nil, nil
	}
	ref, err := object.NewSearchIndex(c.vim).FindByUuid(ctx, d.dc, uuid, true, &instance)
	if err != nil || ref == nil {
		return nil, err
	}
	r := ref.Reference()
	if instance {
		d.refs.put(uuid, r)
	}
	return &r, nil
}

// ownershipOf reads the marker from extraConfig; zero when absent.
func ownershipOf(extra []types.BaseOptionValue) Ownership {
	var o Ownership
	for _, v := range extra {
		ov := v.GetOptionValue()
		s, _ := ov.Value.(string)
		switch ov.Key {
		case ExtraConfigOwnerUID:
			o.OwnerUID = s
		case ExtraConfigOwner:
			o.OwnerName = s
		case ExtraConfigPoolUID:
			o.PoolUID = s
		case ExtraConfigPool:
			o.PoolName = s
		}
	}
	return o
}

// verifyOwnership refuses unless the VM's marker names the expected owner (and pool, when given).
func verifyOwnership(op string, vmName string, have, want Ownership) error {
	if want.OwnerUID == "" {
		return NewError(ClassOwnership, op, "no owner UID given for VM %q", vmName)
	}
	if have.OwnerUID == "" {
		return NewError(ClassOwnership, op, "VM %q carries no ownership marker", vmName)
	}
	if have.OwnerUID != want.OwnerUID || (want.PoolUID != "" && have.PoolUID != want.PoolUID) {
		return NewError(ClassOwnership, op, "VM %q is owned by %s (pool %s), not %s (pool %s)",
			vmName, have.OwnerUID, have.PoolUID, want.OwnerUID, want.PoolUID)
	}
	return nil
}

// toVMInfo converts the retrieved properties into the package's plain type.
func toVMInfo(vm *mo.VirtualMachine) *VMInfo {
	info := &VMInfo{Name: vm.Name, PoweredOn: vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn}
	if vm.Config != nil {
		info.InstanceUUID = vm.Config.InstanceUuid
		info.BIOSUUID = vm.Config.Uuid
		info.Template = vm.Config.Template
		info.DiskFirstBoot = bootsDiskFirst(vm)
		info.Ownership = ownershipOf(vm.Config.ExtraConfig)
		info.NumCPUs = vm.Config.Hardware.NumCPU
		info.MemoryMiB = int64(vm.Config.Hardware.MemoryMB)
		devices := object.VirtualDeviceList(vm.Config.Hardware.Device)
		info.PCIDevices = PCIDevicesOf(devices)
		if info.Disks = disksOf(devices); len(info.Disks) > 0 {
			info.DiskGiB = info.Disks[0].SizeGiB
		}
		var nics []*types.VirtualEthernetCard
		for _, d := range devices {
			switch dev := d.(type) {
			case types.BaseVirtualEthernetCard:
				nics = append(nics, dev.GetVirtualEthernetCard())
			case *types.VirtualCdrom:
				info.CDROMs = append(info.CDROMs, toCDROM(dev))
			}
		}
		// NICs in the order they were added (device keys grow): the first is the machine network's.
		sort.SliceStable(nics, func(i, j int) bool { return nics[i].Key < nics[j].Key })
		for _, n := range nics {
			info.MACAddresses = append(info.MACAddresses, n.MacAddress)
		}
		if len(nics) > 0 {
			info.MACAddress = nics[0].MacAddress
		}
	}
	if q := vm.Runtime.Question; q != nil {
		info.Question = toQuestion(q)
	}
	return info
}

func toCDROM(dev *types.VirtualCdrom) CDROM {
	cd := CDROM{Key: dev.Key, ISOPath: isoPathOf(dev)}
	if dev.Connectable != nil {
		cd.Connected = dev.Connectable.Connected
	}
	return cd
}

// isoPathOf is the datastore ISO backing a CD-ROM, or "".
func isoPathOf(dev *types.VirtualCdrom) string {
	if b, ok := dev.Backing.(*types.VirtualCdromIsoBackingInfo); ok {
		return b.FileName
	}
	return ""
}

func toQuestion(q *types.VirtualMachineQuestionInfo) *Question {
	out := &Question{ID: q.Id, Text: q.Text}
	for _, m := range q.Message {
		if out.MessageID == "" {
			out.MessageID = m.Id
		}
	}
	for _, ch := range q.Choice.ChoiceInfo {
		d := ch.GetElementDescription()
		out.Choices = append(out.Choices, Choice{Key: d.Key, Label: d.Label, Summary: d.Summary})
	}
	return out
}

// FindVM looks a VM up by instance UUID, then by BIOS UUID.
func (c *client) FindVM(ctx context.Context, datacenter, instanceUUID, biosUUID string) (*VMInfo, error) {
	info, err := c.findVM(ctx, datacenter, instanceUUID, biosUUID)
	return info, observe("find", err)
}

func (c *client) findVM(ctx context.Context, datacenter, instanceUUID, biosUUID string) (*VMInfo, error) {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, err
	}
	// The VM and its ancestor folders in one retrieval (one more call when its reference is not known).
	read := vmRead{props: vmProps, folders: true}
	_, res, err := c.vmByUUID(ctx, d, instanceUUID, read)
	if err == nil && res == nil && biosUUID != "" {
		var ref *types.ManagedObjectReference
		if ref, err = c.findRef(ctx, d, biosUUID, false); err == nil && ref != nil {
			if res, err = c.retrieveVM(ctx, *ref, read); err == nil && res.vm == nil {
				res = nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, NewError(ClassNotFound, "FindVM", "no VM with instance UUID %q or BIOS UUID %q", instanceUUID, biosUUID)
	}
	info := toVMInfo(res.vm)
	if p := res.vm.Parent; p != nil {
		root, err := d.folder(ctx, "")
		if err != nil {
			return nil, err
		}
		if info.Folder, err = c.folderPathIn(ctx, res.folders, *p, root.Reference()); err != nil {
			return nil, err
		}
	}
	return info, nil
}

// DestroyVM powers the VM off and destroys it after proving it is the VM owner's marker names (its
// instance UUID is the owner's UID, no template: never a copy). Absent is success.
func (c *client) DestroyVM(ctx context.Context, datacenter, instanceUUID string, owner Ownership) error {
	return observe("destroy", c.destroyVM(ctx, datacenter, instanceUUID, owner))
}

func (c *client) destroyVM(ctx context.Context, datacenter, instanceUUID string, owner Ownership) error {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return err
	}
	ref, res, err := c.vmByUUID(ctx, d, instanceUUID, vmRead{props: guardProps})
	if err != nil || ref == nil {
		return err
	}
	vm := res.vm
	if err := verifyIdentity("DestroyVM", vm, owner); err != nil {
		return err
	}
	obj := object.NewVirtualMachine(c.vim, *ref)
	if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
		t, err := obj.PowerOff(ctx)
		if err == nil {
			_, err = c.waitTaskOf(ctx, "PowerOff", t.Reference())
		}
		if err != nil && !isFault(err, &types.InvalidPowerState{}) {
			return ignoreNotFound(err)
		}
	}
	t, err := obj.Destroy(ctx)
	if err == nil {
		_, err = c.waitTaskOf(ctx, "Destroy", t.Reference())
	}
	if err == nil {
		d.refs.drop(instanceUUID)
		c.log.Info("destroyed VM", "vm", vm.Name, "instanceUUID", instanceUUID)
	}
	return ignoreNotFound(err)
}

// PowerOnVM powers an owned VM on after proving its identity (never a copy); already on is success.
func (c *client) PowerOnVM(ctx context.Context, datacenter, instanceUUID string, owner Ownership) error {
	return observe("power_on", c.powerOnVM(ctx, datacenter, instanceUUID, owner))
}

func (c *client) powerOnVM(ctx context.Context, datacenter, instanceUUID string, owner Ownership) error {
	ref, vm, err := c.ownedVM(ctx, "PowerOnVM", datacenter, instanceUUID, owner, guardProps)
	if err != nil {
		return err
	}
	if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
		return nil
	}
	t, err := object.NewVirtualMachine(c.vim, *ref).PowerOn(ctx)
	if err == nil {
		_, err = c.waitTaskOf(ctx, "PowerOn", t.Reference())
	}
	if err != nil && !isFault(err, &types.InvalidPowerState{}) {
		return err
	}
	c.log.Info("powered on VM", "vm", vm.Name, "instanceUUID", instanceUUID)
	return nil
}

// ownedVM finds the VM with that instance UUID, reading props, and proves it is the VM owner's marker
// names (verifyIdentity: never a copy); absent is a NotFound error of op.
func (c *client) ownedVM(ctx context.Context, op, datacenter, instanceUUID string, owner Ownership, props []string) (*types.ManagedObjectReference, *mo.VirtualMachine, error) {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, nil, err
	}
	ref, res, err := c.vmByUUID(ctx, d, instanceUUID, vmRead{props: props})
	if err != nil {
		return nil, nil, err
	}
	if ref == nil {
		return nil, nil, NewError(ClassNotFound, op, "no VM with instance UUID %q", instanceUUID)
	}
	if err := verifyIdentity(op, res.vm, owner); err != nil {
		return nil, nil, err
	}
	return ref, res.vm, nil
}

// ignoreNotFound treats a VM that vanished meanwhile as gone, which is what the caller wanted.
func ignoreNotFound(err error) error {
	if err != nil && ClassOf(classify("", err)) == ClassNotFound {
		return nil
	}
	return err
}

// ListPoolVMs lists the VMs carrying a pool's marker with one container-view pass over the datacenter:
// the originals and their copies (VMInfo.IsCopy), which callers must never count or change.
func (c *client) ListPoolVMs(ctx context.Context, datacenter, poolUID string) ([]VMInfo, error) {
	if poolUID == "" {
		return nil, nil
	}
	out, err := c.listMarkedVMs(ctx, datacenter, poolUID)
	return out, observe("list", err)
}

// ListMarkedVMs lists the VMs carrying any pool's marker (originals and copies) in one container-view pass.
func (c *client) ListMarkedVMs(ctx context.Context, datacenter string) ([]VMInfo, error) {
	out, err := c.listMarkedVMs(ctx, datacenter, "")
	return out, observe("list", err)
}

// listMarkedVMs lists the VMs whose marker names poolUID ("": any pool).
func (c *client) listMarkedVMs(ctx context.Context, datacenter, poolUID string) ([]VMInfo, error) {
	var out []VMInfo
	err := c.eachVM(ctx, datacenter, vmProps, func(vm *mo.VirtualMachine) {
		if vm.Config == nil {
			return
		}
		if owner := ownershipOf(vm.Config.ExtraConfig).PoolUID; owner == "" || (poolUID != "" && owner != poolUID) {
			return
		}
		out = append(out, *toVMInfo(vm))
	})
	return out, err
}

// eachVM retrieves props of every VM in the datacenter (any folder, any state) in one container view.
func (c *client) eachVM(ctx context.Context, datacenter string, props []string, fn func(*mo.VirtualMachine)) error {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return err
	}
	v, err := view.NewManager(c.vim).CreateContainerView(ctx, d.dc.Reference(), []string{"VirtualMachine"}, true)
	if err != nil {
		return err
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, props, &vms); err != nil {
		return err
	}
	for i := range vms {
		fn(&vms[i])
	}
	return nil
}

// sameDatastorePath compares "[ds] dir/file" paths, tolerating a missing space after the bracket (only
// the blank right after the datastore's closing bracket: a "] " inside the file path is part of the name).
func sameDatastorePath(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimSpace(s)
		if i := strings.Index(s, "]"); i >= 0 && strings.HasPrefix(s[i+1:], " ") {
			s = s[:i+1] + s[i+2:]
		}
		return s
	}
	return norm(a) == norm(b)
}
