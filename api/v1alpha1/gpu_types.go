package v1alpha1

// PCIDeviceSpec is one PCI device of every VM of the pool: a PCI passthrough device chosen by its vendor
// and device ID (vSphere Dynamic DirectPath I/O: any device of that ID configured for passthrough on the
// VM's host), or an NVIDIA vGPU profile (a shared GPU). The shape follows CAPV's VSphereMachine
// pciDevices (deviceId + vendorId, or vGPUProfile). A VM with such a device has all its memory reserved
// (vSphere requires it): see spec.template.hardware.memoryReservationMiB.
// +kubebuilder:validation:XValidation:rule="has(self.deviceId) == has(self.vendorId)",message="spec.template.hardware.pciDevices: deviceId and vendorId go together"
// +kubebuilder:validation:XValidation:rule="has(self.vGPUProfile) != has(self.deviceId)",message="spec.template.hardware.pciDevices: each device is either a passthrough device (deviceId and vendorId) or a vGPU profile (vGPUProfile), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.customLabel) || has(self.deviceId)",message="spec.template.hardware.pciDevices: customLabel applies to a passthrough device (deviceId and vendorId) only"
type PCIDeviceSpec struct {
	// DeviceID is the PCI device ID of a passthrough device, as the host reports it (decimal, e.g. 7864
	// for 0x1EB8, an NVIDIA T4). Set together with vendorId.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Device ID",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	DeviceID *int32 `json:"deviceId,omitempty"`

	// VendorID is the PCI vendor ID of a passthrough device (decimal, e.g. 4318 for 0x10DE, NVIDIA). Set
	// together with deviceId.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Vendor ID",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	VendorID *int32 `json:"vendorId,omitempty"`

	// CustomLabel narrows a passthrough device to host devices carrying this hardware label (vSphere
	// 7.0.2 and later). Empty: any device of the ID.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hardware Label",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	CustomLabel string `json:"customLabel,omitempty"`

	// VGPUProfile is an NVIDIA vGPU profile (vGPU type) the hosts offer, e.g. grid_t4-4q or
	// nvidia_a100-40c.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="vGPU Profile",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	VGPUProfile string `json:"vGPUProfile,omitempty"`
}

// HasPCIDevices reports whether the hardware profile gives the VMs passthrough or vGPU devices.
func (h *HardwareSpec) HasPCIDevices() bool { return h != nil && len(h.PCIDevices) > 0 }

// PCIDeviceStatus is one PCI device of a created VM: a passthrough device (vendor and device ID, with the
// hardware label it is narrowed to) or a vGPU profile.
type PCIDeviceStatus struct {
	// VendorID is the passthrough device's PCI vendor ID (decimal).
	// +optional
	VendorID int32 `json:"vendorId,omitempty"`
	// DeviceID is the passthrough device's PCI device ID (decimal).
	// +optional
	DeviceID int32 `json:"deviceId,omitempty"`
	// CustomLabel is the hardware label the passthrough device is narrowed to.
	// +optional
	CustomLabel string `json:"customLabel,omitempty"`
	// VGPUProfile is the vGPU's profile.
	// +optional
	VGPUProfile string `json:"vGPUProfile,omitempty"`
}
