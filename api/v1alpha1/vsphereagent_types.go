package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VMPhase is the lifecycle phase of one pool VM.
// +kubebuilder:validation:Enum=Pending;Provisioning;Available;Bound;Released;Deleting;Failed;Orphaned
type VMPhase string

const (
	// VMPhasePending means the VM has not been created yet (waiting for the ISO, credentials or budget).
	VMPhasePending VMPhase = "Pending"
	// VMPhaseProvisioning means the VM exists and is booting the discovery ISO; no Agent registered yet.
	VMPhaseProvisioning VMPhase = "Provisioning"
	// VMPhaseAvailable means the Agent registered and was prepared; it is free to bind.
	VMPhaseAvailable VMPhase = "Available"
	// VMPhaseBound means the Agent is bound to an AgentMachine (a worker, or becoming one).
	VMPhaseBound VMPhase = "Bound"
	// VMPhaseReleased means the VM is no longer needed (surplus or unbound after scale-down); cleanup follows.
	VMPhaseReleased VMPhase = "Released"
	// VMPhaseDeleting means the VM is being destroyed.
	VMPhaseDeleting VMPhase = "Deleting"
	// VMPhaseFailed means the VM could not be created or never registered; it will be replaced.
	VMPhaseFailed VMPhase = "Failed"
	// VMPhaseOrphaned is written only by the upstream Helm-installed operator (1.0.x/1.1.x) for a VM it
	// no longer links to a live object; accepted so its stored objects stay valid after a migration
	// (docs/migration.md). This operator never sets it.
	VMPhaseOrphaned VMPhase = "Orphaned"
)

// VsphereAgentSpec names the pool a VM belongs to and the failure domain it is placed in.
// +kubebuilder:validation:XValidation:rule="has(self.failureDomain) == has(oldSelf.failureDomain) && (!has(self.failureDomain) || self.failureDomain == oldSelf.failureDomain)",message="spec.failureDomain is immutable"
type VsphereAgentSpec struct {
	// PoolRef names the VsphereAgentPool in the same namespace. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.poolRef is immutable"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pool"
	PoolRef LocalObjectReference `json:"poolRef"`

	// FailureDomain names the pool's failure domain (spec.vsphere.failureDomains) the VM is placed in,
	// chosen by the pool at creation; empty when the pool has none. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Failure Domain",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	FailureDomain string `json:"failureDomain,omitempty"`
}

// VMStatus records the VM's identity and lifecycle.
type VMStatus struct {
	// Name is the VM name in vCenter.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="VM Name",xDescriptors="urn:alm:descriptor:text"
	Name string `json:"name,omitempty"`
	// BIOSUUID is the VM's BIOS (SMBIOS) UUID, reported by the guest as its serial number.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="BIOS UUID",xDescriptors="urn:alm:descriptor:text"
	BIOSUUID string `json:"biosUUID,omitempty"`
	// InstanceUUID is the VM's vCenter instance UUID, set to this VsphereAgent's UID at creation.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Instance UUID",xDescriptors="urn:alm:descriptor:text"
	InstanceUUID string `json:"instanceUUID,omitempty"`
	// MACAddress is the MAC of the VM's NIC, used to match the registered Agent.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="MAC Address",xDescriptors="urn:alm:descriptor:text"
	MACAddress string `json:"macAddress,omitempty"`
	// MACAddresses are the MACs of all the VM's NICs in their order (the first is MACAddress), set when the
	// VM has more than one: an Agent proves its host only when every interface it reports is one of them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="MAC Addresses",xDescriptors="urn:alm:descriptor:text"
	MACAddresses []string `json:"macAddresses,omitempty"`
	// AgentName names the Agent registered by this VM (in the pool's namespace).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Agent",xDescriptors="urn:alm:descriptor:io.kubernetes:agent-install.openshift.io:v1beta1:Agent"
	AgentName string `json:"agentName,omitempty"`
	// MachineName names the Machine the Agent backs (in the control plane namespace).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Machine",xDescriptors="urn:alm:descriptor:text"
	MachineName string `json:"machineName,omitempty"`
	// Phase is the VM's lifecycle phase.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors="urn:alm:descriptor:io.kubernetes.phase"
	Phase VMPhase `json:"phase,omitempty"`
	// Reason is a machine-readable reason for the phase.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase Reason",xDescriptors="urn:alm:descriptor:io.kubernetes.phase:reason"
	Reason string `json:"reason,omitempty"`
	// LastTransitionTime is when the phase last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// Datacenter is the datacenter the VM was created in.
	// +optional
	Datacenter string `json:"datacenter,omitempty"`
	// ISOPath is the datastore path of the discovery ISO attached at creation.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Path",xDescriptors="urn:alm:descriptor:text"
	ISOPath string `json:"isoPath,omitempty"`
	// CreatedAt is when the VM was created (the registration timeout counts from here).
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	// DiscoveryBootResetAt is when the operator reset the VM because its bound host had booted the
	// discovery image again instead of its installed disk (spec.iso.recoverDiscoveryBoot): one reset per
	// occurrence; cleared when the Agent leaves installing-pending-user-action.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Discovery Boot Reset At",xDescriptors="urn:alm:descriptor:text"
	DiscoveryBootResetAt *metav1.Time `json:"discoveryBootResetAt,omitempty"`
	// ImageCreatedTime is the version of the discovery image the VM booted: the InfraEnv's
	// status.createdTime the pool's cached ISO was fetched for when the VM was created (ISOPath names
	// its bytes). An unbound VM whose image is older than the pool's current one is replaced.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Image Created",xDescriptors="urn:alm:descriptor:text"
	ImageCreatedTime *metav1.Time `json:"imageCreatedTime,omitempty"`
	// Template is the pool's template the VM was created from (its shape and hash); the pool reports a
	// bound worker whose template differs from the current one as drift and never changes it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Template"
	Template *TemplateRecord `json:"template,omitempty"`
	// Hardware is what of the pool's hardware profile the VM was created with (data disks, storage
	// policy); empty when the pool has no profile.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Hardware"
	Hardware *HardwareStatus `json:"hardware,omitempty"`
	// ClusterModule is the ID of the pool's cluster module the VM was added to (spec.antiAffinity);
	// the VM leaves it before it is destroyed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Cluster Module",xDescriptors="urn:alm:descriptor:text"
	ClusterModule string `json:"clusterModule,omitempty"`

	UpstreamVMRecord `json:",inline"`
}

// UpstreamVMRecord holds what the upstream Helm-installed operator (1.0.x/1.1.x) records about a VM
// and this operator does not write: kept so that an object the upstream operator reconciled validates
// and decodes here, and read when its VMs are taken over (docs/migration.md).
type UpstreamVMRecord struct {
	// UpstreamAgentRef is the upstream operator's reference to the VM's Agent. This operator records
	// the Agent in agentName.
	// +optional
	UpstreamAgentRef *corev1.ObjectReference `json:"agentRef,omitempty"`
	// UpstreamMachineRef is the upstream operator's reference to the Machine the Agent backs. This
	// operator records the Machine in machineName.
	// +optional
	UpstreamMachineRef *corev1.ObjectReference `json:"machineRef,omitempty"`
	// OwnerUID is the VsphereAgent UID the upstream operator (1.1.0 and later) wrote into the VM's
	// Notes as its ownership marker; empty for VMs of earlier versions, which carry no marker.
	// +optional
	OwnerUID string `json:"ownerUID,omitempty"`
	// Source is the upstream operator's origin of the VM: VsphereAgent (it created the VM) or
	// DiscoveredAgent (it found an Agent it did not create; never destroyed automatically).
	// +optional
	Source string `json:"source,omitempty"`
}

// ISOEjectionRecord is the crash-recovery record of one CD-ROM ejection, written before the VM is
// reconfigured and cleared only after success.
type ISOEjectionRecord struct {
	// InstanceUUID addresses the VM. Always set by this operator; absent from a record the upstream
	// operator left (which names the VM by vmName).
	// +optional
	InstanceUUID string `json:"instanceUUID,omitempty"`
	// BIOSUUID is the hardware identity verified before ejecting.
	// +optional
	BIOSUUID string `json:"biosUUID,omitempty"`
	// OwnerUID is the VsphereAgent UID the VM's ownership marker must name. Always set by this
	// operator; optional in a record the upstream operator left.
	// +optional
	OwnerUID string `json:"ownerUID,omitempty"`
	// Datacenter is the VM's datacenter.
	Datacenter string `json:"datacenter"`
	// DeviceKey is the CD-ROM device key.
	DeviceKey int32 `json:"deviceKey"`
	// AgentUID is the UID of the installed Agent that triggered the ejection; the operation is refused
	// if the VM's Agent is replaced meanwhile.
	// +optional
	AgentUID string `json:"agentUID,omitempty"`
	// ISOPath is the exact datastore path that must still back the device.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ejecting ISO Path",xDescriptors="urn:alm:descriptor:text"
	ISOPath string `json:"isoPath"`
	// StartedAt is when the ejection was recorded.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ejection Started",xDescriptors="urn:alm:descriptor:text"
	StartedAt metav1.Time `json:"startedAt"`
	// Armed marks a record written ahead, with the VM's Bound status: nothing has been touched, and the
	// ejection starts from it (with no further write) once the Agent reports Installed=True. An armed
	// record is dropped, not finished, when the feature is disabled, the VM released or its Machine
	// deleted before it started.
	// +optional
	Armed bool `json:"armed,omitempty"`
	// TaskRef is the vSphere reconfigure task, checked on later passes instead of waited on.
	// +optional
	TaskRef string `json:"taskRef,omitempty"`
	// QuestionID is the checkpointed ID of the CD-ROM lock question, the only question ever answered.
	// +optional
	QuestionID string `json:"questionID,omitempty"`
	// Attempts counts tries.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ejection Attempts",xDescriptors="urn:alm:descriptor:text"
	Attempts int32 `json:"attempts,omitempty"`
	// LastError is the last failure.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ejection Last Error",xDescriptors="urn:alm:descriptor:text"
	LastError string `json:"lastError,omitempty"`
	// RetryAfter is the earliest time of the next attempt (backoff).
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
	// VMName is the VM name of a record the upstream operator left; this operator addresses the VM by
	// instanceUUID and never writes it.
	// +optional
	VMName string `json:"vmName,omitempty"`
	// DisconnectStarted is the upstream operator's progress mark of a record it left, kept as written
	// (any JSON value); this operator never writes it.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	DisconnectStarted *apiextensionsv1.JSON `json:"disconnectStarted,omitempty"`
}

// VsphereAgentStatus is the observed state of one pool VM.
type VsphereAgentStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors="urn:alm:descriptor:text"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// VM records the VM's identity and lifecycle.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="VM"
	VM VMStatus `json:"vm,omitempty"`
	// StaticIP is the VM's address lease (pools with spec.network).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Static IP"
	StaticIP *StaticIPStatus `json:"staticIP,omitempty"`
	// ISOEjection is the in-flight ejection record (crash recovery); empty when none runs.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Ejection"
	ISOEjection *ISOEjectionRecord `json:"isoEjection,omitempty"`
	// Conditions: Ready, VMCreated, AgentRegistered, AgentPrepared, ISOEjected, ImageCurrent.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VsphereAgent is one vSphere VM of a VsphereAgentPool and the Agent it registers.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=va,categories=agent-forge
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.poolRef.name`
// +kubebuilder:printcolumn:name="VM",type=string,JSONPath=`.status.vm.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.vm.phase`
// +kubebuilder:printcolumn:name="Agent",type=string,JSONPath=`.status.vm.agentName`
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.failureDomain`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="vSphere Agent",resources={{Agent,v1beta1}}
type VsphereAgent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VsphereAgentSpec   `json:"spec,omitempty"`
	Status VsphereAgentStatus `json:"status,omitempty"`
}

// VsphereAgentList contains a list of VsphereAgent.
// +kubebuilder:object:root=true
type VsphereAgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VsphereAgent `json:"items"`
}
