package v1alpha1

// ConditionSpecHonoured says whether the pool's spec is used as written. The CRD admits values the
// upstream operator admitted (so that its pools survive the move) that this operator cannot honour:
// False when a VM made with one could only fail or never serve the NodePool (no VM is created, a
// Warning Event names the field, the value and what to set instead); True with the adjustment's
// reason when a value is honoured with a visible change.
const ConditionSpecHonoured = "SpecHonoured"

// Reasons for SpecHonoured.
const (
	// ReasonSpecHonoured: every value of the pool's spec is honoured as written.
	ReasonSpecHonoured = "SpecHonoured"
	// ReasonNamePrefixCut: spec.template.namePrefix is longer than the 40 characters VM names use (True).
	ReasonNamePrefixCut = "NamePrefixCut"
	// ReasonMemoryNotMultipleOf4: spec.template.memoryMiB is not a multiple of 4 (vCenter refuses it).
	ReasonMemoryNotMultipleOf4 = "MemoryNotMultipleOf4"
	// ReasonGuestIDInvalid: spec.vsphere.guestID has characters no vSphere guest OS identifier has.
	ReasonGuestIDInvalid = "GuestIDInvalid"
	// ReasonSCSITypeUnknown: spec.vsphere.scsiType names no SCSI controller type of vSphere.
	ReasonSCSITypeUnknown = "SCSITypeUnknown"
	// ReasonNetworkAdapterTypeUnknown: spec.vsphere.networkAdapterType names no NIC type of vSphere.
	ReasonNetworkAdapterTypeUnknown = "NetworkAdapterTypeUnknown"
	// ReasonRoleNotWorker: spec.agent.role is not worker; a HyperShift NodePool's nodes are workers.
	ReasonRoleNotWorker = "RoleNotWorker"
)
