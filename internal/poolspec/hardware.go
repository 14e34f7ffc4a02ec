package poolspec

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Hardware renders the pool's hardware profile for the vSphere client; no profile is the zero value
// (the VM exactly as before profiles existed).
func Hardware(pool *afv1.VsphereAgentPool) vsphere.Hardware {
	hw := pool.Spec.Template.Hardware
	if hw == nil {
		return vsphere.Hardware{}
	}
	out := vsphere.Hardware{
		StoragePolicyName: hw.StoragePolicyName, NestedHV: hw.NestedHVEnabled, SecureBoot: hw.EFISecureBootEnabled,
	}
	if hw.NumCoresPerSocket != nil {
		out.NumCoresPerSocket = *hw.NumCoresPerSocket
	}
	if hw.MemoryReservationMiB != nil {
		out.MemoryReservationMiB = *hw.MemoryReservationMiB
	}
	for _, d := range hw.DataDisks {
		out.DataDisks = append(out.DataDisks, vsphere.DataDisk{Name: d.Name, SizeGiB: d.SizeGiB,
			Provisioning: string(d.ProvisioningMode), Datastore: d.Datastore})
	}
	out.PCIDevices = PCIDevices(pool)
	if len(hw.ExtraConfig) > 0 {
		out.ExtraConfig = make(map[string]string, len(hw.ExtraConfig))
		for k, v := range hw.ExtraConfig {
			out.ExtraConfig[k] = string(v)
		}
	}
	return out
}

// HardwareStatus is what users need to see on the VsphereAgent of the profile its VM got: the data
// disks as created (datastore read back from the VM), the storage policy with its ID and the PCI devices
// as vCenter reports them. Nil when the VM has none of them.
func HardwareStatus(hw vsphere.Hardware, info *vsphere.VMInfo) *afv1.HardwareStatus {
	if len(hw.DataDisks) == 0 && hw.StoragePolicyName == "" && len(info.PCIDevices) == 0 {
		return nil
	}
	st := &afv1.HardwareStatus{StoragePolicy: hw.StoragePolicyName, StoragePolicyID: info.StoragePolicyID}
	for _, d := range info.PCIDevices {
		st.PCIDevices = append(st.PCIDevices, afv1.PCIDeviceStatus{VendorID: d.VendorID, DeviceID: d.DeviceID,
			CustomLabel: d.CustomLabel, VGPUProfile: d.VGPUProfile})
	}
	for i, d := range hw.DataDisks {
		ds := afv1.DataDiskStatus{Name: d.Name, SizeGiB: d.SizeGiB, ProvisioningMode: afv1.ProvisioningMode(d.Provisioning)}
		if i+1 < len(info.Disks) { // the boot disk comes first
			ds.Datastore = info.Disks[i+1].Datastore
		}
		st.DataDisks = append(st.DataDisks, ds)
	}
	return st
}

// PCIDevices are the pool's passthrough devices and vGPU profiles (spec.template.hardware.pciDevices) for
// the vSphere client; nil without any.
func PCIDevices(pool *afv1.VsphereAgentPool) []vsphere.PCIDevice {
	hw := pool.Spec.Template.Hardware
	if hw == nil || len(hw.PCIDevices) == 0 {
		return nil
	}
	out := make([]vsphere.PCIDevice, 0, len(hw.PCIDevices))
	for _, d := range hw.PCIDevices {
		v := vsphere.PCIDevice{CustomLabel: d.CustomLabel, VGPUProfile: d.VGPUProfile}
		if d.VendorID != nil {
			v.VendorID = *d.VendorID
		}
		if d.DeviceID != nil {
			v.DeviceID = *d.DeviceID
		}
		out = append(out, v)
	}
	return out
}
