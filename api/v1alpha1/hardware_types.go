package v1alpha1

// HardwareSpec is the optional hardware profile of a pool's VMs (spec.template.hardware). Every knob is
// off or empty by default, so a pool without it gets exactly the VM it got before. Field names follow
// CAPV's VSphereMachine and the OpenShift Machine API vSphere provider (numCoresPerSocket, dataDisks with
// name/sizeGiB/provisioningMode, storagePolicyName) and the vSphere API (nestedHVEnabled,
// efiSecureBootEnabled, extraConfig).
type HardwareSpec struct {
	// NumCoresPerSocket groups the virtual CPUs into sockets of this many cores; spec.template.numCPUs
	// must be a multiple of it. Unset keeps vSphere's default (one core per socket).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cores per Socket",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	NumCoresPerSocket *int32 `json:"numCoresPerSocket,omitempty"`

	// MemoryReservationMiB reserves this much of the VM's memory on its host (at most
	// spec.template.memoryMiB). Unset reserves nothing.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=6291456
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Memory Reservation (MiB)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	MemoryReservationMiB *int64 `json:"memoryReservationMiB,omitempty"`

	// DataDisks are extra disks created with every VM, after the boot disk, on the same SCSI controller.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=14
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Data Disks",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	DataDisks []DataDisk `json:"dataDisks,omitempty"`

	// StoragePolicyName is a vSphere storage policy (SPBM) applied to the VM's home and every disk. It must
	// exist in vCenter (checked before any VM is created: PlacementValid reason StoragePolicyNotFound).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	StoragePolicyName string `json:"storagePolicyName,omitempty"`

	// NestedHVEnabled exposes hardware-assisted virtualization to the guest (nested virtualization, e.g.
	// for OpenShift Virtualization on the workers).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Nested Hardware Virtualization",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:advanced"}
	NestedHVEnabled bool `json:"nestedHVEnabled,omitempty"`

	// EFISecureBootEnabled turns on UEFI secure boot (requires spec.vsphere.firmware efi).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="EFI Secure Boot",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:advanced"}
	EFISecureBootEnabled bool `json:"efiSecureBootEnabled,omitempty"`

	// PCIDevices are PCI passthrough devices (by vendor and device ID, Dynamic DirectPath I/O) and vGPU
	// profiles added to every VM. vSphere requires such a VM to reserve all its memory: the VMs are made
	// with the reservation locked to their memory size, so memoryReservationMiB must be unset or equal to
	// spec.template.memoryMiB. Before a VM is created the placement's hosts are asked whether one offers
	// every device (FailureDomainsAvailable reason PCIDevicesUnavailable when none does). Large-BAR GPUs may need
	// pciPassthru.use64bitMMIO and pciPassthru.64bitMMIOSizeGB in extraConfig.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="PCI Devices and vGPUs",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	PCIDevices []PCIDeviceSpec `json:"pciDevices,omitempty"`

	// ExtraConfig adds advanced VM options (VMX keys). Only an allow-list is accepted, keys that tune the
	// guest without touching what the operator relies on: guestinfo.* (data for the guest), numa.* (NUMA
	// placement), pciPassthru.* (passthrough MMIO sizing) and sched.cpu.latencySensitivity. Everything
	// else is refused, notably disk.EnableUUID (always TRUE: the Assisted Installer needs it), the
	// operator's ownership marker (agent-forge.*), and answer/lock overrides such as msg.autoanswer or
	// cdrom.showIsoLockWarning.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 128 && (k.matches('^(guestinfo|numa|pciPassthru)\\\\.[A-Za-z0-9_.-]+$') || k == 'sched.cpu.latencySensitivity'))",message="spec.template.hardware.extraConfig keys must be guestinfo.*, numa.*, pciPassthru.* or sched.cpu.latencySensitivity (at most 128 characters); other VMX keys are refused"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Extra Config",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	ExtraConfig map[string]ExtraConfigValue `json:"extraConfig,omitempty"`
}

// ExtraConfigValue is one VMX option value (a named type so the schema bounds each map value and the CEL
// rule over the keys stays within the API server's cost budget).
// +kubebuilder:validation:MaxLength=1024
type ExtraConfigValue string

// ProvisioningMode is how a data disk's space is allocated.
// +kubebuilder:validation:Enum=Thin;Thick;EagerlyZeroed
type ProvisioningMode string

const (
	// ProvisioningThin allocates space as the guest writes.
	ProvisioningThin ProvisioningMode = "Thin"
	// ProvisioningThick allocates the whole disk at creation (lazily zeroed).
	ProvisioningThick ProvisioningMode = "Thick"
	// ProvisioningEagerlyZeroed allocates the whole disk and zeroes it at creation (eager-zeroed thick).
	ProvisioningEagerlyZeroed ProvisioningMode = "EagerlyZeroed"
)

// DataDisk is one extra disk of every VM.
type DataDisk struct {
	// Name identifies the disk in the profile (unique); it is not shown to the guest.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Name string `json:"name"`

	// SizeGiB is the disk size in GiB.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16384
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Size (GiB)",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	SizeGiB int32 `json:"sizeGiB"`

	// ProvisioningMode is Thin, Thick (lazily zeroed) or EagerlyZeroed (eager-zeroed thick).
	// +optional
	// +kubebuilder:default=Thin
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Provisioning Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Thin","urn:alm:descriptor:com.tectonic.ui:select:Thick","urn:alm:descriptor:com.tectonic.ui:select:EagerlyZeroed"}
	ProvisioningMode ProvisioningMode `json:"provisioningMode,omitempty"`

	// Datastore puts this disk on a single datastore by name. Empty means the boot disk's datastore.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Datastore",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Datastore string `json:"datastore,omitempty"`
}

// HardwareStatus shows on a VsphereAgent what of the pool's hardware profile its VM was created with.
type HardwareStatus struct {
	// DataDisks lists the VM's data disks as created.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Data Disks"
	DataDisks []DataDiskStatus `json:"dataDisks,omitempty"`
	// StoragePolicy is the storage policy name applied to the VM's home and disks, with its ID.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Storage Policy",xDescriptors="urn:alm:descriptor:text"
	StoragePolicy string `json:"storagePolicy,omitempty"`
	// StoragePolicyID is the SPBM profile ID StoragePolicy resolved to.
	// +optional
	StoragePolicyID string `json:"storagePolicyID,omitempty"`
	// PCIDevices lists the VM's PCI passthrough devices and vGPU profiles as vCenter reports them.
	// +optional
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="PCI Devices and vGPUs"
	PCIDevices []PCIDeviceStatus `json:"pciDevices,omitempty"`
}

// DataDiskStatus is one data disk of a created VM.
type DataDiskStatus struct {
	// Name is the disk's name in the profile.
	Name string `json:"name"`
	// SizeGiB is its size.
	SizeGiB int32 `json:"sizeGiB"`
	// ProvisioningMode is how it was allocated.
	// +optional
	ProvisioningMode ProvisioningMode `json:"provisioningMode,omitempty"`
	// Datastore is the datastore that holds it.
	// +optional
	Datastore string `json:"datastore,omitempty"`
}
