package vcsim

import (
	"fmt"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// PCI passthrough devices and vGPU profiles of the simulator's hosts. govmomi's simulator gives hosts no
// PCI devices and leaves ConfigTarget's passthrough lists empty; here each cluster's EnvironmentBrowser
// is swapped (the simulator's Map.Put pattern, as WrapVM) for one whose QueryConfigTarget for a host adds
// what HostPCIDevices says that host offers, in a real vCenter's shapes: a passthrough device as a
// dynamicPassthrough entry (VirtualMachineDynamicPassthroughInfo) and a pciPassthrough entry
// (VirtualMachinePciPassthroughInfo with its HostPciDevice, IDs as signed shorts); a vGPU profile as a
// sharedGpuPassthroughTypes entry (VirtualMachinePciSharedGpuPassthroughInfo) and a vgpuProfileInfo entry.
// Asked without a host (the cluster's default), it adds every host's. Simulator features that assert the
// plain browser type (UpgradeVM_Task, AddHost_Task into a cluster) do not work on a swapped one.
//
// At Start, DefaultHostPCIDevices apply: DC0_C0_H0 has an NVIDIA T4 for passthrough and a second T4
// shared for vGPU, DC0_C0_H1 only the shared T4, DC0_C0_H2 nothing. SetHostPCIDevices changes one
// host, ResetHostPCIDevices goes back to the defaults.

// PassthroughDevice is one PCI device a host has configured for passthrough.
type PassthroughDevice struct {
	VendorID    int32  `json:"vendorId"`
	DeviceID    int32  `json:"deviceId"`
	VendorName  string `json:"vendorName,omitempty"`
	DeviceName  string `json:"deviceName,omitempty"`
	CustomLabel string `json:"customLabel,omitempty"`
	// ID is the device's PCI address ("0000:3b:00.0").
	ID string `json:"id,omitempty"`
}

// HostPCIDevices is what one host offers to VMs.
type HostPCIDevices struct {
	Passthrough  []PassthroughDevice `json:"passthrough,omitempty"`
	VGPUProfiles []string            `json:"vgpuProfiles,omitempty"`
}

// NVIDIA PCI IDs used by the defaults (decimal, as the API takes them).
const (
	VendorNVIDIA   = 0x10DE // 4318
	DeviceTeslaT4  = 0x1EB8 // 7864
	DeviceA100PCIe = 0x20F1 // 8433: offered by no default host
)

// T4Label is the hardware label of DC0_C0_H0's passthrough T4.
const T4Label = "gpu-t4"

// T4VGPUProfiles are the vGPU types of a shared T4 (16 GB).
var T4VGPUProfiles = []string{"grid_t4-1q", "grid_t4-2q", "grid_t4-4q", "grid_t4-8q", "grid_t4-16q", "grid_t4-4c", "grid_t4-16c"}

// DefaultHostPCIDevices are the hosts' devices at Start (host name -> devices).
func DefaultHostPCIDevices() map[string]HostPCIDevices {
	t4 := PassthroughDevice{VendorID: VendorNVIDIA, DeviceID: DeviceTeslaT4, VendorName: "NVIDIA Corporation",
		DeviceName: "TU104GL [Tesla T4]", CustomLabel: T4Label, ID: "0000:3b:00.0"}
	return map[string]HostPCIDevices{
		"DC0_C0_H0": {Passthrough: []PassthroughDevice{t4}, VGPUProfiles: T4VGPUProfiles},
		"DC0_C0_H1": {VGPUProfiles: T4VGPUProfiles},
	}
}

// pciRegistry holds every host's devices (by host name).
type pciRegistry struct {
	mu    sync.Mutex
	hosts map[string]HostPCIDevices
}

func (r *pciRegistry) of(host string) HostPCIDevices {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hosts[host]
}

// envBrowser is a cluster's EnvironmentBrowser whose ConfigTarget lists the hosts' PCI devices.
type envBrowser struct {
	*simulator.EnvironmentBrowser
	pci *pciRegistry
}

// QueryConfigTarget is the simulator's answer plus the PCI devices of the host asked about (every host
// of the cluster when none is named).
func (b *envBrowser) QueryConfigTarget(ctx *simulator.Context, req *types.QueryConfigTarget) soap.HasFault {
	res := b.EnvironmentBrowser.QueryConfigTarget(ctx, req)
	body, ok := res.(*methods.QueryConfigTargetBody)
	if !ok || body.Res == nil || body.Res.Returnval == nil {
		return res
	}
	target := *body.Res.Returnval // a copy: the simulator may hand out a shared, preset response
	var hosts []types.ManagedObjectReference
	if req.Host != nil {
		hosts = append(hosts, *req.Host)
	} else {
		hosts = b.clusterHosts(ctx)
	}
	for _, ref := range hosts {
		h, ok := ctx.Map.Get(ref).(*simulator.HostSystem)
		if !ok {
			continue
		}
		addPCIDevices(&target, b.pci.of(h.Name))
	}
	body.Res.Returnval = &target
	return body
}

// clusterHosts lists the hosts of the cluster this browser belongs to.
func (b *envBrowser) clusterHosts(ctx *simulator.Context) []types.ManagedObjectReference {
	for _, obj := range ctx.Map.All("ClusterComputeResource") {
		if cl, ok := obj.(*simulator.ClusterComputeResource); ok && cl.EnvironmentBrowser != nil && *cl.EnvironmentBrowser == b.Self {
			return append([]types.ManagedObjectReference(nil), cl.Host...)
		}
	}
	return nil
}

// addPCIDevices appends one host's devices to a ConfigTarget in vCenter's shapes.
func addPCIDevices(t *types.ConfigTarget, d HostPCIDevices) {
	for _, p := range d.Passthrough {
		name := p.VendorName + " " + p.DeviceName
		t.DynamicPassthrough = append(t.DynamicPassthrough, types.VirtualMachineDynamicPassthroughInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: name},
			VendorName:               p.VendorName, DeviceName: p.DeviceName, CustomLabel: p.CustomLabel,
			VendorId: p.VendorID, DeviceId: p.DeviceID,
		})
		t.PciPassthrough = append(t.PciPassthrough, &types.VirtualMachinePciPassthroughInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: name},
			PciDevice: types.HostPciDevice{Id: p.ID, ClassId: 0x0302, VendorId: int16(uint16(p.VendorID)), //nolint:gosec // PCI IDs are 16-bit; vSphere carries them as signed shorts
				DeviceId: int16(uint16(p.DeviceID)), VendorName: p.VendorName, DeviceName: p.DeviceName}, //nolint:gosec // as above
			SystemId: "5f3b3c6e-0000-0000-0000-" + fmt.Sprintf("%012x", p.DeviceID),
		})
	}
	for _, v := range d.VGPUProfiles {
		t.SharedGpuPassthroughTypes = append(t.SharedGpuPassthroughTypes, types.VirtualMachinePciSharedGpuPassthroughInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: v}, Vgpu: v,
		})
		t.VgpuProfileInfo = append(t.VgpuProfileInfo, types.VirtualMachineVgpuProfileInfo{
			VirtualMachineTargetInfo: types.VirtualMachineTargetInfo{Name: v}, ProfileName: v, DeviceVendorId: VendorNVIDIA,
			ProfileSharing: "timeSliced", ProfileClass: "quadro",
		})
	}
}

// preparePCIDevices swaps every cluster's EnvironmentBrowser for one that lists the hosts' PCI devices,
// with DefaultHostPCIDevices.
func (e *Env) preparePCIDevices() {
	e.pci = &pciRegistry{hosts: DefaultHostPCIDevices()}
	for _, obj := range e.Map().All("ClusterComputeResource") {
		cl, ok := obj.(*simulator.ClusterComputeResource)
		if !ok || cl.EnvironmentBrowser == nil {
			continue
		}
		if eb, ok := e.Map().Get(*cl.EnvironmentBrowser).(*simulator.EnvironmentBrowser); ok {
			e.Map().Put(&envBrowser{EnvironmentBrowser: eb, pci: e.pci})
		}
	}
}

type hostPCIReq struct {
	Host    string         `json:"host"`
	Devices HostPCIDevices `json:"devices"`
}

// SetHostPCIDevices sets what the host named host (e.g. "DC0_C0_H2") offers, replacing what it offered.
// Works in process and on a simulator in its own process.
func (e *Env) SetHostPCIDevices(host string, d HostPCIDevices) error {
	if e.ctl != nil {
		return e.ctl.call("pci/host", hostPCIReq{Host: host, Devices: d}, nil)
	}
	if err := e.withEntity("HostSystem", host, func(_ mo.Entity) {}); err != nil {
		return err
	}
	e.pci.mu.Lock()
	defer e.pci.mu.Unlock()
	e.pci.hosts[host] = d
	return nil
}

// ResetHostPCIDevices gives every host its DefaultHostPCIDevices again.
func (e *Env) ResetHostPCIDevices() error {
	if e.ctl != nil {
		return e.ctl.call("pci/reset", empty{}, nil)
	}
	e.pci.mu.Lock()
	defer e.pci.mu.Unlock()
	e.pci.hosts = DefaultHostPCIDevices()
	return nil
}

// HostPCIDevicesOf returns what the host offers now (for assertions).
func (e *Env) HostPCIDevicesOf(host string) (HostPCIDevices, error) {
	if e.ctl != nil {
		var res HostPCIDevices
		err := e.ctl.call("pci/host-devices", nameReq{Name: host}, &res)
		return res, err
	}
	e.pci.mu.Lock()
	defer e.pci.mu.Unlock()
	return e.pci.hosts[host], nil
}
