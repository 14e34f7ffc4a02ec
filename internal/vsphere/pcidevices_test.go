package vsphere_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

var (
	t4        = vsphere.PCIDevice{VendorID: vcsim.VendorNVIDIA, DeviceID: vcsim.DeviceTeslaT4}
	t4Labeled = vsphere.PCIDevice{VendorID: vcsim.VendorNVIDIA, DeviceID: vcsim.DeviceTeslaT4, CustomLabel: vcsim.T4Label}
	a100      = vsphere.PCIDevice{VendorID: vcsim.VendorNVIDIA, DeviceID: vcsim.DeviceA100PCIe}
	vgpu4q    = vsphere.PCIDevice{VGPUProfile: "grid_t4-4q"}
	vgpuA100  = vsphere.PCIDevice{VGPUProfile: "nvidia_a100-40c"}
)

func TestFitDevices(t *testing.T) {
	hosts := vsphere.HostDevices{Compute: "C0", Hosts: []vsphere.HostPCI{
		{Name: "h0", Passthrough: []vsphere.PassthroughDevice{{VendorID: 0x10DE, DeviceID: 0x1EB8, CustomLabel: "gpu-t4"}}, VGPUProfiles: []string{"grid_t4-4q"}},
		{Name: "h1", VGPUProfiles: []string{"grid_t4-4q", "grid_t4-8q"}},
		{Name: "h2", Passthrough: []vsphere.PassthroughDevice{{VendorID: 0x8086, DeviceID: 0x0D58}}},
		{Name: "h3"},
	}}
	intelQAT := vsphere.PCIDevice{VendorID: 0x8086, DeviceID: 0x0D58}
	for _, tc := range []struct {
		name      string
		want      []vsphere.PCIDevice
		hosts     []string
		shortfall string
	}{
		{name: "no device fits every host", want: nil, hosts: []string{"h0", "h1", "h2", "h3"}},
		{name: "a vGPU profile fits the hosts sharing a GPU of that type", want: []vsphere.PCIDevice{vgpu4q}, hosts: []string{"h0", "h1"}},
		{name: "a passthrough device by ID fits whatever its label", want: []vsphere.PCIDevice{t4}, hosts: []string{"h0"}},
		{name: "a label narrows the device", want: []vsphere.PCIDevice{{VendorID: 0x10DE, DeviceID: 0x1EB8, CustomLabel: "other"}}, shortfall: "no host of C0 offers PCI device 10de:1eb8 labelled other"},
		{name: "passthrough and vGPU together need one host with both", want: []vsphere.PCIDevice{t4Labeled, vgpu4q}, hosts: []string{"h0"}},
		{name: "a vendor ID above 0x7fff matches (signed shorts on the wire)", want: []vsphere.PCIDevice{intelQAT}, hosts: []string{"h2"}},
		{name: "a device no host has is named", want: []vsphere.PCIDevice{t4, a100, vgpuA100}, shortfall: "no host of C0 offers PCI device 10de:20f1, vGPU profile nvidia_a100-40c"},
		{name: "devices on different hosts", want: []vsphere.PCIDevice{intelQAT, vgpu4q}, shortfall: "no single host of C0 offers all of PCI device 8086:0d58, vGPU profile grid_t4-4q"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fit := vsphere.FitDevices(hosts, tc.want)
			if !slices.Equal(fit.Hosts, tc.hosts) {
				t.Errorf("hosts %v, want %v", fit.Hosts, tc.hosts)
			}
			if got := fit.Shortfall(hosts, tc.want); got != tc.shortfall {
				t.Errorf("shortfall %q, want %q", got, tc.shortfall)
			}
		})
	}
	if got := vsphere.FitDevices(vsphere.HostDevices{Compute: "C1"}, []vsphere.PCIDevice{t4}).Shortfall(vsphere.HostDevices{Compute: "C1"}, []vsphere.PCIDevice{t4}); !strings.Contains(got, "no connected host") {
		t.Errorf("a cluster without usable hosts: %q", got)
	}
}

// The simulator's hosts offer the default devices in ConfigTarget; a host changed by SetHostPCIDevices
// is read as changed, and a host in maintenance mode is left out.
func TestReadHostDevicesOnTheSimulator(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	got, err := h.client.ReadHostDevices(ctx, vsphere.HostDevicesSpec{Datacenter: vcsim.Datacenter, ResourcePool: vcsim.ResourcePool})
	if err != nil {
		t.Fatal(err)
	}
	if got.Compute != vcsim.Cluster || len(got.Hosts) != 3 {
		t.Fatalf("read %+v, want the 3 hosts of %s", got, vcsim.Cluster)
	}
	if fit := vsphere.FitDevices(*got, []vsphere.PCIDevice{t4Labeled, vgpu4q}); !slices.Equal(fit.Hosts, []string{"DC0_C0_H0"}) {
		t.Errorf("T4 passthrough + grid_t4-4q fit %v, want DC0_C0_H0", fit.Hosts)
	}
	if fit := vsphere.FitDevices(*got, []vsphere.PCIDevice{vgpu4q}); !slices.Equal(fit.Hosts, []string{"DC0_C0_H0", "DC0_C0_H1"}) {
		t.Errorf("grid_t4-4q fits %v, want H0 and H1", fit.Hosts)
	}
	if fit := vsphere.FitDevices(*got, []vsphere.PCIDevice{a100}); len(fit.Hosts) != 0 || len(fit.Missing) != 1 {
		t.Errorf("an A100 fits %+v, want none missing it", fit)
	}

	if err := h.env.SetHostPCIDevices("DC0_C0_H2", vcsim.HostPCIDevices{Passthrough: []vcsim.PassthroughDevice{{VendorID: vcsim.VendorNVIDIA, DeviceID: vcsim.DeviceA100PCIe}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.env.ResetHostPCIDevices() })
	got, err = h.client.ReadHostDevices(ctx, vsphere.HostDevicesSpec{Datacenter: vcsim.Datacenter, ResourcePool: vcsim.ResourcePool})
	if err != nil {
		t.Fatal(err)
	}
	if fit := vsphere.FitDevices(*got, []vsphere.PCIDevice{a100}); !slices.Equal(fit.Hosts, []string{"DC0_C0_H2"}) {
		t.Errorf("after SetHostPCIDevices an A100 fits %v, want DC0_C0_H2", fit.Hosts)
	}
	if err := h.env.SetHostPCIDevices("no-such-host", vcsim.HostPCIDevices{}); err == nil {
		t.Error("SetHostPCIDevices of an unknown host succeeded")
	}
}

// A VM with a passthrough device and a vGPU gets a VirtualPCIPassthrough of each, with a Dynamic
// DirectPath and a vmiop backing, and all its memory reserved and locked to its size.
func TestPCIDevicesLandOnTheVM(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	spec := h.env.VMSpec("gpu", owner)
	spec.ISOPath = isoPath
	spec.Hardware.PCIDevices = []vsphere.PCIDevice{t4Labeled, vgpu4q}
	if _, err := h.client.CreateVM(ctx, spec); err != nil {
		t.Fatalf("CreateVM: %v", err)
	}
	admin := adminClient(t, h)
	var vm mo.VirtualMachine
	ref := object.NewVirtualMachine(admin, *vmRef(t, h, owner.OwnerUID))
	if err := ref.Properties(ctx, ref.Reference(), []string{"config"}, &vm); err != nil {
		t.Fatal(err)
	}
	cfg := vm.Config
	if cfg.MemoryReservationLockedToMax == nil || !*cfg.MemoryReservationLockedToMax {
		t.Errorf("memoryReservationLockedToMax = %v, want true", cfg.MemoryReservationLockedToMax)
	}
	if cfg.MemoryAllocation == nil || cfg.MemoryAllocation.Reservation == nil || *cfg.MemoryAllocation.Reservation != spec.MemoryMiB {
		t.Errorf("memory allocation %+v, want all %d MiB reserved", cfg.MemoryAllocation, spec.MemoryMiB)
	}
	devs := object.VirtualDeviceList(cfg.Hardware.Device).SelectByType((*types.VirtualPCIPassthrough)(nil))
	if len(devs) != 2 {
		t.Fatalf("%d VirtualPCIPassthrough devices, want 2", len(devs))
	}
	dyn, ok := devs[0].GetVirtualDevice().Backing.(*types.VirtualPCIPassthroughDynamicBackingInfo)
	if !ok || len(dyn.AllowedDevice) != 1 || dyn.AllowedDevice[0].VendorId != vcsim.VendorNVIDIA ||
		dyn.AllowedDevice[0].DeviceId != vcsim.DeviceTeslaT4 || dyn.CustomLabel != vcsim.T4Label {
		t.Errorf("first device backing %#v, want dynamic DirectPath 10de:1eb8 labelled %s", devs[0].GetVirtualDevice().Backing, vcsim.T4Label)
	}
	if vmiop, ok := devs[1].GetVirtualDevice().Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo); !ok || vmiop.Vgpu != "grid_t4-4q" {
		t.Errorf("second device backing %#v, want vmiop grid_t4-4q", devs[1].GetVirtualDevice().Backing)
	}
	if got := vsphere.PCIDevicesOf(cfg.Hardware.Device); !slices.Equal(got, spec.Hardware.PCIDevices) {
		t.Errorf("read back %v, want %v", got, spec.Hardware.PCIDevices)
	}
}

// The client refuses on its own what the CRD refuses: a partial reservation with devices, bad IDs.
func TestPCIDevicesValidation(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	for name, hw := range map[string]vsphere.Hardware{
		"partial reservation": {MemoryReservationMiB: 1024, PCIDevices: []vsphere.PCIDevice{vgpu4q}},
		"vendor 0":            {PCIDevices: []vsphere.PCIDevice{{DeviceID: 1}}},
		"device above 16 bit": {PCIDevices: []vsphere.PCIDevice{{VendorID: 0x10DE, DeviceID: 0x10000}}},
	} {
		spec := h.env.VMSpec("bad-"+strings.ReplaceAll(name, " ", "-"), newOwner())
		spec.Hardware = hw
		_, err := h.client.CreateVM(ctx, spec)
		wantClass(t, err, vsphere.ClassInvalid)
	}
	spec := h.env.VMSpec("full-reservation", newOwner())
	spec.Hardware = vsphere.Hardware{MemoryReservationMiB: spec.MemoryMiB, PCIDevices: []vsphere.PCIDevice{vgpu4q}}
	if _, err := h.client.CreateVM(ctx, spec); err != nil {
		t.Errorf("a reservation equal to the memory with devices: %v", err)
	}
}
