package poolspec_test

import (
	"slices"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestPCIDevicesForTheClient(t *testing.T) {
	vendor, device := int32(0x10DE), int32(0x1EB8)
	reservation := int64(1024)
	for _, tc := range []struct {
		name    string
		hw      *afv1.HardwareSpec
		devices []vsphere.PCIDevice
		// reserved is VMNeed's memory reservation for a template of 8192 MiB.
		reserved int64
	}{
		{name: "no profile", hw: nil},
		{name: "a profile without devices keeps its reservation", hw: &afv1.HardwareSpec{MemoryReservationMiB: &reservation}, reserved: 1024},
		{name: "a vGPU profile reserves all memory (no swap file on the datastore)", hw: &afv1.HardwareSpec{PCIDevices: []afv1.PCIDeviceSpec{{VGPUProfile: "grid_t4-4q"}}},
			devices: []vsphere.PCIDevice{{VGPUProfile: "grid_t4-4q"}}, reserved: 8192},
		{name: "a passthrough device with its label, in order", hw: &afv1.HardwareSpec{PCIDevices: []afv1.PCIDeviceSpec{
			{VendorID: &vendor, DeviceID: &device, CustomLabel: "gpu-t4"}, {VGPUProfile: "grid_t4-4q"}}},
			devices: []vsphere.PCIDevice{{VendorID: 0x10DE, DeviceID: 0x1EB8, CustomLabel: "gpu-t4"}, {VGPUProfile: "grid_t4-4q"}}, reserved: 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &afv1.VsphereAgentPool{}
			p.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 4, MemoryMiB: 8192, DiskGiB: 100, Hardware: tc.hw}
			if got := poolspec.PCIDevices(p); !slices.Equal(got, tc.devices) {
				t.Errorf("PCIDevices %v, want %v", got, tc.devices)
			}
			if got := poolspec.Hardware(p).PCIDevices; !slices.Equal(got, tc.devices) {
				t.Errorf("Hardware().PCIDevices %v, want %v", got, tc.devices)
			}
			if got := poolspec.VMNeed(p).MemoryReservationMiB; got != tc.reserved {
				t.Errorf("VMNeed reservation %d, want %d", got, tc.reserved)
			}
		})
	}
}

// The VsphereAgent shows the devices vCenter reports on its VM; a VM without devices, data disks or policy
// has no hardware status.
func TestHardwareStatusShowsPCIDevices(t *testing.T) {
	if st := poolspec.HardwareStatus(vsphere.Hardware{}, &vsphere.VMInfo{}); st != nil {
		t.Fatalf("a plain VM: %+v, want nil", st)
	}
	info := &vsphere.VMInfo{PCIDevices: []vsphere.PCIDevice{{VendorID: 0x10DE, DeviceID: 0x1EB8, CustomLabel: "gpu-t4"}, {VGPUProfile: "grid_t4-4q"}}}
	st := poolspec.HardwareStatus(vsphere.Hardware{PCIDevices: info.PCIDevices}, info)
	want := []afv1.PCIDeviceStatus{{VendorID: 0x10DE, DeviceID: 0x1EB8, CustomLabel: "gpu-t4"}, {VGPUProfile: "grid_t4-4q"}}
	if st == nil || !slices.Equal(st.PCIDevices, want) {
		t.Fatalf("status %+v, want devices %v", st, want)
	}
}
