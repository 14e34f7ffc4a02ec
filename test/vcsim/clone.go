package vcsim

// vCenter's CloneVM_Task copies the source VM's configuration, its extraConfig included (the clone's
// spec.config entries are applied over the copy), and gives the clone a new instance UUID, a new BIOS
// UUID and new MAC addresses for NICs whose addressType is not "manual" (VMware: "The MAC address and
// UUID of a clone are different from the parent virtual machine"; CloneSpec.memory keeps only manual
// MACs). A template is made with CloneSpec.template or MarkAsTemplate (config.template). govmomi's
// simulator copies the hardware but neither the extraConfig nor new MACs: cloneLikeVCenter completes the
// request before the simulator runs it, so that copies of the operator's VMs carry its marker as they
// do on a real vCenter. The simulator already generates the instance and BIOS UUIDs.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
	"github.com/vmware/govmomi/vim25/xml"
)

// MethodCloneVM is vCenter's clone of a VirtualMachine.
const MethodCloneVM = "CloneVM_Task"

// cloneLikeVCenter rewrites a CloneVM_Task request in place: the source's extraConfig under the spec's,
// and an edit giving every non-manual NIC an empty MAC, which the simulator then generates anew.
func cloneLikeVCenter(ctx *simulator.Context, m *simulator.Method) {
	req, ok := m.Body.(*types.CloneVM_Task)
	if !ok {
		return
	}
	obj := ctx.Map.Get(m.This)
	src := asVM(obj)
	if src == nil {
		return
	}
	var extra []types.BaseOptionValue
	var devices types.ArrayOfVirtualDevice
	ctx.Map.WithLock(ctx, obj, func() {
		if src.Config == nil {
			return
		}
		for _, o := range src.Config.ExtraConfig {
			if ov := o.GetOptionValue(); ov != nil {
				c := *ov
				extra = append(extra, &c)
			}
		}
		deepCopyDevices(types.ArrayOfVirtualDevice{VirtualDevice: src.Config.Hardware.Device}, &devices)
	})
	if req.Spec.Config == nil {
		req.Spec.Config = &types.VirtualMachineConfigSpec{}
	}
	req.Spec.Config.ExtraConfig = mergeOptions(extra, req.Spec.Config.ExtraConfig)

	named := map[int32]bool{} // NICs the request itself changes keep what it says
	for _, dc := range append(append([]types.BaseVirtualDeviceConfigSpec(nil), req.Spec.Location.DeviceChange...), req.Spec.Config.DeviceChange...) {
		if s := dc.GetVirtualDeviceConfigSpec(); s != nil && s.Device != nil {
			named[s.Device.GetVirtualDevice().Key] = true
		}
	}
	for _, d := range devices.VirtualDevice {
		nic, ok := d.(types.BaseVirtualEthernetCard)
		if !ok || named[d.GetVirtualDevice().Key] {
			continue
		}
		card := nic.GetVirtualEthernetCard()
		if card.AddressType == string(types.VirtualEthernetCardMacTypeManual) {
			continue
		}
		card.MacAddress, card.AddressType = "", string(types.VirtualEthernetCardMacTypeGenerated)
		req.Spec.Location.DeviceChange = append(req.Spec.Location.DeviceChange,
			&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: d})
	}
}

// mergeOptions is base with over's keys replaced or added, in base's order then over's.
func mergeOptions(base, over []types.BaseOptionValue) []types.BaseOptionValue {
	out := append([]types.BaseOptionValue(nil), base...)
	index := map[string]int{}
	for i, o := range out {
		index[o.GetOptionValue().Key] = i
	}
	for _, o := range over {
		ov := o.GetOptionValue()
		if ov == nil {
			continue
		}
		if i, ok := index[ov.Key]; ok {
			out[i] = o
			continue
		}
		index[ov.Key] = len(out)
		out = append(out, o)
	}
	return out
}

// deepCopyDevices copies devices through their SOAP encoding (the devices' backings are pointers the
// source VM keeps using).
func deepCopyDevices(src types.ArrayOfVirtualDevice, dst *types.ArrayOfVirtualDevice) {
	b, err := xml.Marshal(src)
	if err != nil {
		panic(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.TypeFunc = types.TypeFunc()
	if err := dec.Decode(dst); err != nil {
		panic(err)
	}
}

// CloneOptions say where and as what CloneVM makes a copy.
type CloneOptions struct {
	// Name of the copy; Folder is its VM folder relative to the datacenter's ("" = the source's folder).
	Name   string
	Folder string
	// Template makes the copy a template (CloneSpec.template); PowerOn powers a non-template copy on.
	Template bool
	PowerOn  bool
}

// CloneVM copies the VM with that instance UUID with vCenter's CloneVM_Task, as an administrator, a
// backup or a DR product would, and returns the copy's instance UUID. Works in and out of process.
func (e *Env) CloneVM(ctx context.Context, instanceUUID string, opts CloneOptions) (string, error) {
	c, finder, folders, err := e.adminSession(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Logout(context.WithoutCancel(ctx)) }()
	dc, err := finder.Datacenter(ctx, Datacenter)
	if err != nil {
		return "", err
	}
	yes := true
	ref, err := object.NewSearchIndex(c.Client).FindByUuid(ctx, dc, instanceUUID, true, &yes)
	if err != nil || ref == nil {
		return "", fmt.Errorf("clone: no VM with instance UUID %s: %w", instanceUUID, err)
	}
	src := object.NewVirtualMachine(c.Client, ref.Reference())
	var folder *object.Folder
	if opts.Folder != "" {
		if err := e.EnsureFolder(ctx, opts.Folder); err != nil {
			return "", err
		}
		if folder, err = finder.Folder(ctx, folders.VmFolder.InventoryPath+"/"+opts.Folder); err != nil {
			return "", err
		}
	} else {
		var vm mo.VirtualMachine
		if err := src.Properties(ctx, src.Reference(), []string{"parent"}, &vm); err != nil {
			return "", err
		}
		folder = object.NewFolder(c.Client, *vm.Parent)
	}
	pool, err := src.ResourcePool(ctx) // a template has none: the inventory's pool then
	if err != nil {
		if pool, err = finder.ResourcePool(ctx, ResourcePool); err != nil {
			return "", err
		}
	}
	poolRef := pool.Reference()
	spec := types.VirtualMachineCloneSpec{Location: types.VirtualMachineRelocateSpec{Pool: &poolRef},
		Template: opts.Template, PowerOn: opts.PowerOn && !opts.Template}
	task, err := src.Clone(ctx, folder, opts.Name, spec)
	if err != nil {
		return "", err
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return "", fmt.Errorf("clone %s: %w", opts.Name, err)
	}
	var vm mo.VirtualMachine
	if err := c.PropertyCollector().RetrieveOne(ctx, info.Result.(types.ManagedObjectReference), []string{"config.instanceUuid"}, &vm); err != nil {
		return "", err
	}
	return vm.Config.InstanceUuid, nil
}
