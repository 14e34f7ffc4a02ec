package v1alpha1

// Condition types of VsphereAgentPool checked before any VM is created (preflight). Each is False with a
// reason naming the problem, an Event says the same, and no VsphereAgent is created while one is False.
const (
	// ConditionPlacementValid: every object named in spec.vsphere exists in vCenter and is of the right
	// kind (datacenter, datastore or datastore cluster, ISO datastore, resource pool, folder parent,
	// network, tags). Checked once per spec generation and again on a slow timer.
	ConditionPlacementValid = "PlacementValid"
	// ConditionPrivilegesSufficient: the credentials hold the vCenter privileges the operator uses on the
	// resource pool, folder, datastores and network.
	ConditionPrivilegesSufficient = "PrivilegesSufficient"
	// ConditionAgentLabelsMatch: spec.agent.labels (plus the labels the operator adds) satisfy the
	// NodePool's spec.platform.agent.agentLabelSelector, so the Agent CAPI provider can bind our Agents.
	ConditionAgentLabelsMatch = "AgentLabelsMatch"
)

// Reasons for PlacementValid.
const (
	// ReasonPlacementValid: every object named in spec.vsphere exists.
	ReasonPlacementValid = "PlacementValid"
	// ReasonDatacenterNotFound: spec.vsphere's datacenter does not exist.
	ReasonDatacenterNotFound = "DatacenterNotFound"
	// ReasonDatastoreNotFound: spec.vsphere's datastore does not exist.
	ReasonDatastoreNotFound = "DatastoreNotFound"
	// ReasonISODatastoreNotFound: spec.vsphere's ISO datastore does not exist.
	ReasonISODatastoreNotFound = "ISODatastoreNotFound"
	// ReasonResourcePoolNotFound: spec.vsphere's resource pool does not exist.
	ReasonResourcePoolNotFound = "ResourcePoolNotFound"
	// ReasonFolderNotFound: spec.vsphere's folder does not exist.
	ReasonFolderNotFound = "FolderNotFound"
	// ReasonNetworkNotFound: a network of spec.vsphere does not exist.
	ReasonNetworkNotFound = "NetworkNotFound"
	// ReasonTagNotFound: a tag of spec.vsphere does not exist.
	ReasonTagNotFound = "TagNotFound"
	// ReasonStoragePolicyNotFound: spec.template.hardware.storagePolicyName names no vSphere storage policy.
	ReasonStoragePolicyNotFound = "StoragePolicyNotFound"
	// ReasonPlacementUnchecked: vCenter could not be asked (see VSphereReachable).
	ReasonPlacementUnchecked = "PlacementUnchecked"
)

// Reasons for PrivilegesSufficient.
const (
	// ReasonPrivilegesSufficient: the vCenter account holds every privilege the pool needs.
	ReasonPrivilegesSufficient = "PrivilegesSufficient"
	// ReasonInsufficientPrivileges: the vCenter account lacks privileges the pool needs (named in the message).
	ReasonInsufficientPrivileges = "InsufficientPrivileges"
	// ReasonPrivilegesUnchecked: vCenter could not be asked about the privileges (see VSphereReachable).
	ReasonPrivilegesUnchecked = "PrivilegesUnchecked"
)

// Reasons for AgentLabelsMatch.
const (
	// ReasonAgentLabelsMatch: the NodePool's agentLabelSelector is satisfied by the labels the operator sets.
	ReasonAgentLabelsMatch = "AgentLabelsMatch"
	// ReasonAgentLabelsMismatch: the NodePool's agentLabelSelector is not satisfied by the labels the operator sets.
	ReasonAgentLabelsMismatch = "AgentLabelsMismatch"
	// ReasonNodePoolNotFound: the NodePool named by spec.nodePoolRef does not exist (yet).
	ReasonNodePoolNotFound = "NodePoolNotFound"
)

// Reasons of a VsphereAgent whose VM creation failed.
const (
	// ReasonDuplicateName: vCenter refused the create because a VM that is not ours already has the name.
	// The VsphereAgent is Failed (never retried under that name) and the pool replaces it.
	ReasonDuplicateName = "DuplicateName"
	// ReasonInvalidPlacement: the placement did not resolve when the VM was created.
	ReasonInvalidPlacement = "InvalidPlacement"
	// ReasonVMCreateFailed: creation failed transiently; retried until registrationTimeout after the
	// VsphereAgent's creation.
	ReasonVMCreateFailed = "VMCreateFailed"
)
