package vsphere

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// PCIDevice is one PCI device of a VM: a passthrough device chosen by vendor and device ID (Dynamic
// DirectPath I/O: vSphere binds any device of that ID configured for passthrough on the VM's host) when
// VGPUProfile is empty, else an NVIDIA vGPU of that profile (a shared GPU).
type PCIDevice struct {
	VendorID, DeviceID int32
	// CustomLabel narrows a passthrough device to host devices with that hardware label.
	CustomLabel string
	VGPUProfile string
}

// String names the device in messages: "vGPU profile grid_t4-4q", "PCI device 10de:1eb8" (vendor:device,
// hex, as lspci shows them) with its label when it has one.
func (d PCIDevice) String() string {
	if d.VGPUProfile != "" {
		return "vGPU profile " + d.VGPUProfile
	}
	s := fmt.Sprintf("PCI device %04x:%04x", uint16(d.VendorID), uint16(d.DeviceID))
	if d.CustomLabel != "" {
		s += " labelled " + d.CustomLabel
	}
	return s
}

// HasPCIDevices reports whether the profile adds passthrough or vGPU devices: the VM then has all its
// memory reserved (vSphere refuses to power on such a VM otherwise).
func (h Hardware) HasPCIDevices() bool { return len(h.PCIDevices) > 0 }

// pciPassthroughDevice is the virtual device of d: a VirtualPCIPassthrough with a Dynamic DirectPath
// backing listing the one allowed vendor/device ID, or with a vmiop (vGPU) backing naming the profile.
func pciPassthroughDevice(d PCIDevice, key int32) *types.VirtualPCIPassthrough {
	dev := &types.VirtualPCIPassthrough{VirtualDevice: types.VirtualDevice{Key: key}}
	if d.VGPUProfile != "" {
		dev.Backing = &types.VirtualPCIPassthroughVmiopBackingInfo{Vgpu: d.VGPUProfile}
		return dev
	}
	dev.Backing = &types.VirtualPCIPassthroughDynamicBackingInfo{
		AllowedDevice: []types.VirtualPCIPassthroughAllowedDevice{{VendorId: d.VendorID, DeviceId: d.DeviceID}},
		CustomLabel:   d.CustomLabel,
	}
	return dev
}

// PCIDevicesOf lists the passthrough and vGPU devices of a VM's hardware as the profile names them (for
// reading back what a VM was made with).
func PCIDevicesOf(devices object.VirtualDeviceList) []PCIDevice {
	var out []PCIDevice
	for _, d := range devices.SelectByType((*types.VirtualPCIPassthrough)(nil)) {
		switch b := d.GetVirtualDevice().Backing.(type) {
		case *types.VirtualPCIPassthroughVmiopBackingInfo:
			out = append(out, PCIDevice{VGPUProfile: b.Vgpu})
		case *types.VirtualPCIPassthroughDynamicBackingInfo:
			for _, a := range b.AllowedDevice {
				out = append(out, PCIDevice{VendorID: a.VendorId, DeviceID: a.DeviceId, CustomLabel: b.CustomLabel})
			}
		}
	}
	return out
}

// HostDevicesSpec names the compute a pool's VMs land on: the resource pool, whose owner cluster (or
// standalone host) has the hosts.
type HostDevicesSpec struct {
	Datacenter string
	// ResourcePool empty means the datacenter's only resource pool.
	ResourcePool string
}

// HostDevices is what the hosts of a placement offer to VMs, read from vCenter's ConfigTarget of each host.
type HostDevices struct {
	// Compute names the cluster or standalone host owning the resource pool.
	Compute string
	// Hosts are its hosts that take VMs (connected, not in maintenance mode), sorted by name.
	Hosts []HostPCI
}

// HostPCI is one host's passthrough devices and vGPU profiles.
type HostPCI struct {
	Name string
	// Passthrough are the devices configured for passthrough (ConfigTarget.dynamicPassthrough and
	// pciPassthrough), IDs as unsigned 16-bit values.
	Passthrough []PassthroughDevice
	// VGPUProfiles are the vGPU types its GPUs offer (ConfigTarget.sharedGpuPassthroughTypes and
	// vgpuProfileInfo).
	VGPUProfiles []string
}

// PassthroughDevice is one device a host offers for passthrough.
type PassthroughDevice struct {
	VendorID, DeviceID     int32
	CustomLabel            string
	VendorName, DeviceName string
}

// offers reports whether the host has d.
func (h HostPCI) offers(d PCIDevice) bool {
	if d.VGPUProfile != "" {
		for _, p := range h.VGPUProfiles {
			if p == d.VGPUProfile {
				return true
			}
		}
		return false
	}
	for _, p := range h.Passthrough {
		if uint16(p.VendorID) == uint16(d.VendorID) && uint16(p.DeviceID) == uint16(d.DeviceID) &&
			(d.CustomLabel == "" || p.CustomLabel == d.CustomLabel) {
			return true
		}
	}
	return false
}

// DevicesFit is where a VM with a set of PCI devices can run.
type DevicesFit struct {
	// Hosts offer every device (the VM can run on any of them).
	Hosts []string
	// Missing are the devices no host offers at all; empty with no Hosts means each device is offered
	// somewhere, but no host offers all of them.
	Missing []PCIDevice
}

// FitDevices says which hosts of h offer every device of want (presence only: whether a device is free
// when the VM powers on is vCenter's to decide).
func FitDevices(h HostDevices, want []PCIDevice) DevicesFit {
	var fit DevicesFit
	anywhere := make([]bool, len(want))
	for _, host := range h.Hosts {
		all := true
		for i, d := range want {
			if host.offers(d) {
				anywhere[i] = true
			} else {
				all = false
			}
		}
		if all {
			fit.Hosts = append(fit.Hosts, host.Name)
		}
	}
	for i, d := range want {
		if !anywhere[i] {
			fit.Missing = append(fit.Missing, d)
		}
	}
	return fit
}

// Shortfall explains, when no host fits, what is missing (empty when some host fits).
func (f DevicesFit) Shortfall(h HostDevices, want []PCIDevice) string {
	if len(f.Hosts) > 0 {
		return ""
	}
	if len(h.Hosts) == 0 {
		return fmt.Sprintf("%s has no connected host outside maintenance mode", h.Compute)
	}
	if len(f.Missing) > 0 {
		names := make([]string, 0, len(f.Missing))
		for _, d := range f.Missing {
			names = append(names, d.String())
		}
		return fmt.Sprintf("no host of %s offers %s", h.Compute, strings.Join(names, ", "))
	}
	names := make([]string, 0, len(want))
	for _, d := range want {
		names = append(names, d.String())
	}
	return fmt.Sprintf("no single host of %s offers all of %s", h.Compute, strings.Join(names, ", "))
}

// ReadHostDevices reads, read-only, the passthrough devices and vGPU profiles of every host of the
// placement's cluster (or standalone host) that takes VMs: EnvironmentBrowser.QueryConfigTarget per host.
func (c *client) ReadHostDevices(ctx context.Context, spec HostDevicesSpec) (*HostDevices, error) {
	out, err := c.readHostDevices(ctx, spec)
	return out, observe("hostDevices", err)
}

func (c *client) readHostDevices(ctx context.Context, spec HostDevicesSpec) (*HostDevices, error) {
	_, ownerRef, err := c.poolOwner(ctx, spec.Datacenter, spec.ResourcePool, "ReadHostDevices")
	if err != nil {
		return nil, err
	}
	var owner mo.ComputeResource
	if err := c.pc().RetrieveOne(ctx, ownerRef, []string{"name", "host", "environmentBrowser"}, &owner); err != nil {
		return nil, classify("ReadHostDevices", err)
	}
	out := &HostDevices{Compute: owner.Name}
	if len(owner.Host) == 0 || owner.EnvironmentBrowser == nil {
		return out, nil
	}
	var hosts []mo.HostSystem
	if err := c.pc().Retrieve(ctx, owner.Host, []string{"name", "runtime.connectionState", "runtime.inMaintenanceMode"}, &hosts); err != nil {
		return nil, classify("ReadHostDevices", err)
	}
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
	for _, h := range hosts {
		if h.Runtime.ConnectionState != types.HostSystemConnectionStateConnected || h.Runtime.InMaintenanceMode {
			continue
		}
		ref := h.Reference()
		res, err := methods.QueryConfigTarget(ctx, c.vim, &types.QueryConfigTarget{This: *owner.EnvironmentBrowser, Host: &ref})
		if err != nil {
			return nil, classify("ReadHostDevices", err)
		}
		out.Hosts = append(out.Hosts, hostPCIOf(h.Name, res.Returnval))
	}
	return out, nil
}

// hostPCIOf reads one host's ConfigTarget: its Dynamic DirectPath and DirectPath devices (IDs as unsigned
// 16-bit values: HostPciDevice carries them as signed shorts) and its vGPU types.
func hostPCIOf(name string, t *types.ConfigTarget) HostPCI {
	h := HostPCI{Name: name}
	if t == nil {
		return h
	}
	for _, p := range t.DynamicPassthrough {
		h.Passthrough = append(h.Passthrough, PassthroughDevice{VendorID: int32(uint16(p.VendorId)), DeviceID: int32(uint16(p.DeviceId)),
			CustomLabel: p.CustomLabel, VendorName: p.VendorName, DeviceName: p.DeviceName})
	}
	for _, b := range t.PciPassthrough {
		p, ok := b.(*types.VirtualMachinePciPassthroughInfo)
		if !ok {
			continue // SR-IOV virtual functions are network devices, not what pciDevices names
		}
		dev := p.PciDevice
		h.Passthrough = append(h.Passthrough, PassthroughDevice{VendorID: int32(uint16(dev.VendorId)), DeviceID: int32(uint16(dev.DeviceId)),
			VendorName: dev.VendorName, DeviceName: dev.DeviceName})
	}
	seen := map[string]bool{}
	for _, g := range t.SharedGpuPassthroughTypes {
		if !seen[g.Vgpu] {
			seen[g.Vgpu] = true
			h.VGPUProfiles = append(h.VGPUProfiles, g.Vgpu)
		}
	}
	for _, g := range t.VgpuProfileInfo {
		if !seen[g.ProfileName] {
			seen[g.ProfileName] = true
			h.VGPUProfiles = append(h.VGPUProfiles, g.ProfileName)
		}
	}
	return h
}
