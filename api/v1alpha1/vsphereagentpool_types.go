package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdoptionPolicy says whether a pool takes over the VMs the upstream operator made for it.
// +kubebuilder:validation:Enum=Disabled;Enabled
type AdoptionPolicy string

const (
	// AdoptionDisabled reports upstream VsphereAgents and leaves them alone.
	AdoptionDisabled AdoptionPolicy = "Disabled"
	// AdoptionEnabled adopts upstream VMs whose evidence agrees.
	AdoptionEnabled AdoptionPolicy = "Enabled"
)

// CleanupPolicy says what happens to a pool's VMs and Agents when they are no longer needed.
// +kubebuilder:validation:Enum=Delete;Retain
type CleanupPolicy string

const (
	// CleanupPolicyDelete destroys surplus VMs and deletes their Agents.
	CleanupPolicyDelete CleanupPolicy = "Delete"
	// CleanupPolicyRetain keeps VMs and Agents; nothing external is deleted.
	CleanupPolicyRetain CleanupPolicy = "Retain"
)

// VsphereAgentPoolSpec defines the vSphere capacity that backs one HyperShift Agent NodePool.
// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.limits.maxVMs) || !has(self.limits.maxConcurrentProvisioning) || self.limits.maxConcurrentProvisioning <= self.limits.maxVMs",message="spec.limits.maxConcurrentProvisioning must be less than or equal to spec.limits.maxVMs",fieldPath=".limits.maxConcurrentProvisioning"
// +kubebuilder:validation:XValidation:rule="!has(self.standby) || self.standby == 0 || !has(self.limits) || !has(self.limits.maxVMs) || self.standby <= self.limits.maxVMs",message="spec.standby must be less than or equal to spec.limits.maxVMs",fieldPath=".standby"
// +kubebuilder:validation:XValidation:rule="!has(self.vsphere.additionalNetworks) || has(self.network) || self.vsphere.additionalNetworks.all(a, !has(a.addressesFromPools) || a.addressesFromPools.size() == 0)",message="spec.vsphere.additionalNetworks[].addressesFromPools need spec.network (the first NIC's static addresses)",fieldPath=".vsphere.additionalNetworks"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || !has(self.vsphere.additionalNetworks) || self.vsphere.additionalNetworks.all(a, !has(a.interfaceName) || a.interfaceName != (has(self.network.interfaceName) ? self.network.interfaceName : 'ens192'))",message="spec.vsphere.additionalNetworks[].interfaceName must differ from spec.network.interfaceName",fieldPath=".vsphere.additionalNetworks"
// +kubebuilder:validation:XValidation:rule="!has(self.template) || !has(self.template.hardware) || !has(self.template.hardware.efiSecureBootEnabled) || !self.template.hardware.efiSecureBootEnabled || !has(self.vsphere.firmware) || self.vsphere.firmware == 'efi'",message="spec.template.hardware.efiSecureBootEnabled requires spec.vsphere.firmware efi",fieldPath=".template.hardware.efiSecureBootEnabled"
type VsphereAgentPoolSpec struct {
	// HostedClusterRef names the HyperShift HostedCluster in the pool's namespace: the NodePool's
	// spec.clusterName. Checked every pass; a pool naming another cluster takes no action
	// (DemandObserved=False, reason HostedClusterMismatch).
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hosted Cluster"
	HostedClusterRef HostedClusterReference `json:"hostedClusterRef"`

	// NodePoolRef names the HyperShift NodePool in the pool's namespace whose demand this pool serves.
	// Immutable: one pool serves one NodePool for its whole life.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.nodePoolRef is immutable"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Pool"
	NodePoolRef NodePoolReference `json:"nodePoolRef"`

	// InfraEnvRef names the Assisted Installer InfraEnv in the pool's namespace whose discovery ISO the VMs boot.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="InfraEnv"
	InfraEnvRef InfraEnvReference `json:"infraEnvRef"`

	// ControlPlaneNamespace is the hosted control plane namespace where HyperShift renders Machines and
	// AgentMachines: <namespace>-<HostedCluster name>, dots in the name turned into dashes. Checked every pass
	// against the NodePool's spec.clusterName; a pool naming another namespace takes no action
	// (DemandObserved=False, reason ControlPlaneNamespaceMismatch). Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.controlPlaneNamespace is immutable"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Control Plane Namespace",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	ControlPlaneNamespace string `json:"controlPlaneNamespace"`

	// VSphere says where and how VMs are created.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="vSphere"
	VSphere VSphereSpec `json:"vsphere"`

	// Template sizes and names the VMs.
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="VM Template"
	Template VMTemplateSpec `json:"template,omitempty"`

	// Agent says how registered Agents are prepared for the Agent CAPI provider.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Agent"
	Agent AgentBindingSpec `json:"agent"`

	// ISO configures the discovery ISO cache and ejection.
	// +optional
	// +kubebuilder:default={}
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discovery ISO"
	ISO ISOSpec `json:"iso,omitempty"`

	// CleanupPolicy says whether surplus VMs and their Agents are deleted (Delete) or kept (Retain).
	// +optional
	// +kubebuilder:default=Delete
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cleanup Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Delete","urn:alm:descriptor:com.tectonic.ui:select:Retain"}
	CleanupPolicy CleanupPolicy `json:"cleanupPolicy,omitempty"`

	// Limits caps how many VMs the pool may own and create at once. Unset means no cap.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Limits"
	Limits *LimitsSpec `json:"limits,omitempty"`

	// RegistrationTimeout is how long a VM may run without its Agent registering before it is destroyed
	// and replaced.
	// +optional
	// +kubebuilder:default="20m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="spec.registrationTimeout must be between 1m and 24h"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Registration Timeout",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	RegistrationTimeout *metav1.Duration `json:"registrationTimeout,omitempty"`

	// Network gives the VMs static addresses from Cluster API IPAM pools (no DHCP on the VM network).
	// Unset: the VMs get their address by DHCP, as before.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Static IP Network"
	Network *NetworkSpec `json:"network,omitempty"`

	// Adoption lets the pool take over the VMs the upstream Helm-installed operator (1.0.x/1.1.x) made
	// for it, each only when every piece of evidence agrees (name, BIOS UUID, MAC, folder, CD-ROM, the
	// upstream Notes marker); see docs/migration.md. Disabled: upstream VsphereAgents are reported and
	// never acted on.
	// +optional
	// +kubebuilder:default=Disabled
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Adopt Upstream VMs",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Disabled","urn:alm:descriptor:com.tectonic.ui:select:Enabled"}
	Adoption AdoptionPolicy `json:"adoption,omitempty"`

	// Standby is how many VMs the pool keeps booted into discovery with their Agents registered,
	// validated, labelled and approved for it while no AgentMachine waits (warm standby), so the Agent
	// CAPI provider binds one as soon as an AgentMachine appears. They count toward limits.maxVMs;
	// one the provider takes is replaced at once. See docs/standby.md.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Warm Standby VMs",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	Standby int32 `json:"standby,omitempty"`

	// AntiAffinity asks vSphere DRS to keep the pool's VMs on different ESXi hosts through vSphere
	// cluster modules the pool owns (see AntiAffinitySpec and docs/anti-affinity.md). Unset: none.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Anti-Affinity",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	AntiAffinity *AntiAffinitySpec `json:"antiAffinity,omitempty"`

	// Paused stops every action of the pool (creates, deletes, Agent changes, ISO refresh); status is
	// still reported.
	// +optional
	// +kubebuilder:default=false
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Paused",xDescriptors="urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	Paused bool `json:"paused,omitempty"`
}

// VSphereSpec says where and how VMs are created in vCenter.
type VSphereSpec struct {
	// CredentialsSecretRef names a Secret with keys server, username, password, and optionally
	// insecure ("true" skips TLS verification), caBundle (PEM CA certificates for the vCenter
	// endpoint) and thumbprint (SHA-256 fingerprint of the vCenter certificate).
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Secret"
	CredentialsSecretRef SecretReference `json:"credentialsSecretRef"`

	// Datacenter is the vSphere datacenter name or inventory path.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Datacenter",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Datacenter string `json:"datacenter"`

	// DatastoreCluster names the datastore cluster (placed with Storage DRS recommendations) or a single
	// datastore where VM disks are created.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Datastore Cluster",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	DatastoreCluster string `json:"datastoreCluster"`

	// ISODatastore names the datastore that holds the cached discovery ISOs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="ISO Datastore",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ISODatastore string `json:"isoDatastore"`

	// ResourcePool is the resource pool name or inventory path for the VMs. Empty means the
	// datacenter's default resource pool (which must be unambiguous).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resource Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ResourcePool string `json:"resourcePool,omitempty"`

	// Folder is the VM folder (created if missing). Empty means a folder named after the hosted cluster.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="spec.vsphere.folder may not contain '..'"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="VM Folder",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Folder string `json:"folder,omitempty"`

	// Network is the port group or network name for the VM's first NIC (the machine network).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Network string `json:"network"`

	// VMTags are vSphere tags attached to every VM, as tag names, "category/tag" or tag IDs
	// ("urn:vmomi:InventoryServiceTag:...").
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="VM Tags"
	VMTags []string `json:"vmTags,omitempty"`

	// GuestID is the vSphere guest OS identifier, passed to vCenter as given (an identifier vCenter
	// does not know fails the VM's creation).
	// +optional
	// +kubebuilder:default=rhel9_64Guest
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Guest OS ID",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	GuestID string `json:"guestID,omitempty"`

	// SCSIType is the SCSI controller type: pvscsi, lsilogic, lsilogic-sas, buslogic, or the aliases
	// scsi (lsilogic) and virtualscsi (pvscsi). Another value is admitted (the upstream operator's pools
	// may carry one) but fails the VM's creation.
	// +optional
	// +kubebuilder:default=pvscsi
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="SCSI Controller",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:pvscsi","urn:alm:descriptor:com.tectonic.ui:select:lsilogic","urn:alm:descriptor:com.tectonic.ui:select:lsilogic-sas","urn:alm:descriptor:com.tectonic.ui:select:buslogic","urn:alm:descriptor:com.tectonic.ui:advanced"}
	SCSIType string `json:"scsiType,omitempty"`

	// Firmware is the VM firmware.
	// +optional
	// +kubebuilder:default=efi
	// +kubebuilder:validation:Enum=efi;bios
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Firmware",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:efi","urn:alm:descriptor:com.tectonic.ui:select:bios","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Firmware string `json:"firmware,omitempty"`

	// NetworkAdapterType is the NIC model: vmxnet3, e1000, e1000e, or vmxnet, vmxnet2, vmxnet3vrdma,
	// pcnet32, sriov. Another value is admitted (the upstream operator's pools may carry one) but fails
	// the VM's creation.
	// +optional
	// +kubebuilder:default=vmxnet3
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Adapter",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:vmxnet3","urn:alm:descriptor:com.tectonic.ui:select:e1000","urn:alm:descriptor:com.tectonic.ui:select:e1000e","urn:alm:descriptor:com.tectonic.ui:advanced"}
	NetworkAdapterType string `json:"networkAdapterType,omitempty"`

	// AdditionalNetworks are the VM's NICs after the first (spec.vsphere.network), created in this order;
	// each may take static addresses from its own IPAM pools (see AdditionalNetwork). vSphere allows 10
	// NICs per VM.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=9
	// +kubebuilder:validation:XValidation:rule="self.all(a, !has(a.interfaceName) || self.exists_one(b, has(b.interfaceName) && b.interfaceName == a.interfaceName))",message="spec.vsphere.additionalNetworks[].interfaceName must be unique"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Additional Networks"
	AdditionalNetworks []AdditionalNetwork `json:"additionalNetworks,omitempty"`

	// DiskEagerlyScrub creates the disk eager-zeroed thick instead of thin.
	// +optional
	// +kubebuilder:default=false
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Eager-Zeroed Disk",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:advanced"}
	DiskEagerlyScrub bool `json:"diskEagerlyScrub,omitempty"`

	// FailureDomains spread the VMs over several placements (see FailureDomain); empty means one
	// placement, the fields above.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Failure Domains"
	FailureDomains []FailureDomain `json:"failureDomains,omitempty"`
}

// VMTemplateSpec sizes and names the VMs of a pool.
// +kubebuilder:validation:XValidation:rule="!has(self.hardware) || !has(self.hardware.numCoresPerSocket) || (has(self.numCPUs) ? self.numCPUs : 4) % self.hardware.numCoresPerSocket == 0",message="spec.template.numCPUs must be a multiple of spec.template.hardware.numCoresPerSocket",fieldPath=".hardware.numCoresPerSocket"
// +kubebuilder:validation:XValidation:rule="!has(self.hardware) || !has(self.hardware.memoryReservationMiB) || self.hardware.memoryReservationMiB <= (has(self.memoryMiB) ? self.memoryMiB : 16384)",message="spec.template.hardware.memoryReservationMiB must not exceed spec.template.memoryMiB",fieldPath=".hardware.memoryReservationMiB"
// +kubebuilder:validation:XValidation:rule="!has(self.hardware) || !has(self.hardware.pciDevices) || size(self.hardware.pciDevices) == 0 || !has(self.hardware.memoryReservationMiB) || self.hardware.memoryReservationMiB == (has(self.memoryMiB) ? self.memoryMiB : 16384)",message="spec.template.hardware.memoryReservationMiB must be unset or equal to spec.template.memoryMiB when spec.template.hardware.pciDevices is set: vSphere reserves all the memory of a VM with a PCI passthrough or vGPU device",fieldPath=".hardware.memoryReservationMiB"
type VMTemplateSpec struct {
	// NamePrefix prefixes VM names (VM name = <namePrefix>-<suffix>; also the Agent hostname).
	// Empty means <hostedCluster>-<role>.
	// The VM name must fit a DNS label, so a prefix longer than 40 characters is cut to 40 (the
	// upstream operator admitted 58 and ignores the prefix since its 0.0.27).
	// +optional
	// +kubebuilder:validation:MaxLength=58
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="VM Name Prefix",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	NamePrefix string `json:"namePrefix,omitempty"`

	// NumCPUs is the number of virtual CPUs.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CPUs",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	NumCPUs int32 `json:"numCPUs,omitempty"`

	// MemoryMiB is the memory size in MiB. vSphere takes only multiples of 4; another value is admitted
	// (the upstream operator's pools may carry one) but fails the VM's creation.
	// +optional
	// +kubebuilder:default=16384
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=6291456
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Memory (MiB)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MemoryMiB int64 `json:"memoryMiB,omitempty"`

	// DiskGiB is the size of the boot disk in GiB.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=20
	// +kubebuilder:validation:Maximum=65536
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Disk (GiB)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	DiskGiB int32 `json:"diskGiB,omitempty"`

	// Hardware is the optional hardware profile (cores per socket, memory reservation, data disks,
	// storage policy, nested virtualization, secure boot, allow-listed extraConfig). Unset: none of it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hardware Profile",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Hardware *HardwareSpec `json:"hardware,omitempty"`
}

// A named type so the schema bounds each map value: a CEL rule over unbounded map values exceeds the
// API server's cost budget and the whole CRD is refused.

// LabelValue is a Kubernetes label value: at most 63 characters, alphanumeric at both ends.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// LabelSet returns the labels as a plain map, the shape label selectors and object metadata use.
func (a AgentBindingSpec) LabelSet() map[string]string {
	out := make(map[string]string, len(a.Labels))
	for k, v := range a.Labels {
		out[k] = string(v)
	}
	return out
}

// AgentBindingSpec describes how a discovered Assisted Installer Agent is made consumable by the
// HyperShift Agent NodePool.
// +kubebuilder:validation:XValidation:rule="!has(self.labels) || !('hypershift.openshift.io/nodepool-role' in self.labels) || self.labels['hypershift.openshift.io/nodepool-role'] == (has(self.role) ? self.role : 'worker')",message="spec.agent.labels[hypershift.openshift.io/nodepool-role] must equal spec.agent.role",fieldPath=".labels"
type AgentBindingSpec struct {
	// Role is the HyperShift NodePool role label value (hypershift.openshift.io/nodepool-role) and the
	// Agent spec.role. For HyperShift worker pools this is "worker"; another value is admitted (the
	// upstream operator's pools may carry one) and passed to the Agent as given.
	// +optional
	// +kubebuilder:default=worker
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Role",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Role string `json:"role,omitempty"`

	// Labels are put on a discovered Agent so the Agent CAPI provider can bind it to an AgentMachine.
	// They must match the NodePool's spec.platform.agent.agentLabelSelector (checked: condition
	// AgentLabelsMatch). hypershift.openshift.io/nodepool-role may be given if it equals role; other keys
	// under agent-forge.containeroo.ch/ (e.g. agent-forge.containeroo.ch/nodepool) are the user's.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || size(k.split('/')[0]) <= 253))",message="spec.agent.labels keys must be valid label keys ([prefix/]name)"
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k == 'agentMachineRef' || k == 'agent-forge.containeroo.ch/pool' || k == 'agent-forge.containeroo.ch/vsphereagent')",message="spec.agent.labels may not set agentMachineRef (the Agent CAPI provider's binding label) or the operator's own agent-forge.containeroo.ch/pool and agent-forge.containeroo.ch/vsphereagent"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Agent Labels"
	Labels map[string]LabelValue `json:"labels"`

	// Approve sets spec.approved=true on prepared Agents so installation can proceed.
	// +optional
	// +kubebuilder:default=true
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Approve Agents",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Approve *bool `json:"approve,omitempty"`
}

// ISOSpec configures the discovery ISO cache and ejection.
type ISOSpec struct {
	// CheckInterval is how often the cached ISO is revalidated against the InfraEnv's URL (a conditional
	// request where the server allows). At least 10s; zero or less means 1h.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('0s') || duration(self) >= duration('10s')",message="spec.iso.checkInterval must be at least 10s (zero or less means the default)"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Check Interval",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	CheckInterval *metav1.Duration `json:"checkInterval,omitempty"`

	// RetainVersions is how many cached ISO versions are kept on the datastore.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Retained ISO Versions",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	RetainVersions int32 `json:"retainVersions,omitempty"`

	// PathPrefix is the datastore folder for cached ISOs. Empty means agent-forge/<namespace>/<pool>.
	// Leading and trailing slashes are dropped.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="spec.iso.pathPrefix may not contain '..'"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Datastore Path Prefix",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	PathPrefix string `json:"pathPrefix,omitempty"`

	// EjectAfterInstall disconnects and ejects the discovery ISO once the VM's Agent reports
	// Installed=True. Off by default; enabling it includes already installed workers.
	// +optional
	// +kubebuilder:default=false
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Eject ISO After Install",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	EjectAfterInstall bool `json:"ejectAfterInstall,omitempty"`

	// RecoverDiscoveryBoot resolves a bound worker whose host booted the discovery image again instead of
	// its installed disk (assisted-service's installing-pending-user-action, "Wrong boot order
	// detection"): the operator ejects the discovery ISO, puts the disk first in the VM's boot order and
	// resets the VM, once per occurrence, so the host starts its installed disk. Off by default: the VM
	// is then only reported (Ready=False InstallingPendingUserAction, a Warning Event) for someone to act.
	// The reset is a hard restart of a host that runs nothing but the discovery image at that moment; if
	// the host still waits registrationTimeout after it, the VsphereAgent says the reset did not help and
	// nothing more is tried. Needs VirtualMachine.Interact.Reset besides the ejection's privileges.
	// +optional
	// +kubebuilder:default=false
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Recover Workers That Boot Discovery Again",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:advanced"}
	RecoverDiscoveryBoot bool `json:"recoverDiscoveryBoot,omitempty"`

	// ReplaceOutdatedVMs replaces a VM that never bound and booted a discovery image older than the
	// current one (the InfraEnv's image changed: new version, static network configs, proxy), when no
	// AgentMachine has reserved its Agent, so no stale image keeps serving. Bound or installed workers
	// are never touched. On by default; false opts the pool out.
	// +optional
	// +kubebuilder:default=true
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replace VMs Booted From an Outdated Image",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:advanced"}
	ReplaceOutdatedVMs *bool `json:"replaceOutdatedVMs,omitempty"`

	// AllowPlainHTTP lets the discovery ISO be downloaded over plain http://, and lets an https://
	// download follow a redirect to http://. Off by default: an http:// ISO URL is refused before any
	// request (ISOReady=False PlainHTTPRefused, a Warning Event) and a redirect from https to http fails
	// the download, because the image travels unauthenticated and anyone on the path can swap it for one
	// that boots their own host. Turn it on only for an image service reachable over a trusted network.
	// +optional
	// +kubebuilder:default=false
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Allow Plain HTTP ISO Downloads",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:advanced"}
	AllowPlainHTTP bool `json:"allowPlainHTTP,omitempty"`

	// CABundleRef names a ConfigMap or Secret in the pool's namespace whose key holds PEM CA
	// certificates trusted for the image host, besides the system roots and the cluster's injected
	// trusted CA bundle (e.g. an image service signed by a private CA). It is read on every pass: a
	// changed bundle is used by the next download without a restart. Unset: no extra CA.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image Host CA Bundle",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	CABundleRef *CABundleReference `json:"caBundleRef,omitempty"`

	// MaxSize is the largest discovery ISO the cache accepts: a larger Content-Length is refused before
	// any byte is read, and a body without a length (chunked) that grows past it is cut off and its
	// partial upload deleted; ISOReady reports ISOTooLarge and no VM boots it. A discovery ISO is about
	// 100 MiB (minimal) to 1.2 GiB (full).
	// +optional
	// +kubebuilder:default="8Gi"
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self > 0 : quantity(self).isGreaterThan(quantity('0'))",message="spec.iso.maxSize must be a positive quantity"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum ISO Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`
}

// CABundleKind is the kind of object a CABundleReference names.
// +kubebuilder:validation:Enum=ConfigMap;Secret
type CABundleKind string

const (
	// CABundleKindConfigMap names a ConfigMap (CA certificates are public).
	CABundleKindConfigMap CABundleKind = "ConfigMap"
	// CABundleKindSecret names a Secret.
	CABundleKindSecret CABundleKind = "Secret"
)

// DefaultCABundleKey is the key read when a CABundleReference names none (the key cert-manager and
// OpenShift's service CA write).
const DefaultCABundleKey = "ca.crt"

// CABundleReference names a key of a ConfigMap or Secret in the pool's namespace holding PEM CA
// certificates.
type CABundleReference struct {
	// Kind is ConfigMap or Secret.
	// +optional
	// +kubebuilder:default=ConfigMap
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:ConfigMap","urn:alm:descriptor:com.tectonic.ui:select:Secret"}
	Kind CABundleKind `json:"kind,omitempty"`
	// Name of the ConfigMap or Secret, in the pool's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Name string `json:"name"`
	// Key holds the PEM certificates (default ca.crt).
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Key string `json:"key,omitempty"`
}

// LimitsSpec caps the pool's VM count and creation rate.
type LimitsSpec struct {
	// MaxVMs is the hard cap on VMs owned by the pool.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum VMs",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxVMs *int32 `json:"maxVMs,omitempty"`

	// MaxConcurrentProvisioning is how many VMs may be provisioning (created, not yet registered) at once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum Concurrent Provisioning",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	MaxConcurrentProvisioning *int32 `json:"maxConcurrentProvisioning,omitempty"`
}

// OwnedVM summarises one VM owned by the pool (one VsphereAgent).
type OwnedVM struct {
	// Name is the VM name (also the VsphereAgent name and the Agent hostname).
	Name string `json:"name"`
	// InstanceUUID is the VM's vCenter instance UUID (equal to the VsphereAgent's UID).
	// +optional
	InstanceUUID string `json:"instanceUUID,omitempty"`
	// Phase is the VsphereAgent's phase.
	// +optional
	Phase VMPhase `json:"phase,omitempty"`
	// AgentName names the Agent registered by this VM.
	// +optional
	AgentName string `json:"agentName,omitempty"`
	// MachineName names the Machine the Agent backs, in the control plane namespace.
	// +optional
	MachineName string `json:"machineName,omitempty"`
	// Address is the VM's static address (pools with spec.network).
	// +optional
	Address string `json:"address,omitempty"`
	// BIOSUUID is the VM's BIOS UUID. Written by the upstream operator; this operator reports it in
	// the VsphereAgent's status.vm.
	// +optional
	BIOSUUID string `json:"biosUUID,omitempty"`
	// MACAddress is the MAC of the VM's NIC. Written by the upstream operator; this operator reports it
	// in the VsphereAgent's status.vm.
	// +optional
	MACAddress string `json:"macAddress,omitempty"`
	// Reason is the machine-readable reason of the phase. Written by the upstream operator; this
	// operator reports it in the VsphereAgent's status.vm.
	// +optional
	Reason string `json:"reason,omitempty"`
	// LastTransitionTime is when the phase last changed. Written by the upstream operator; this
	// operator reports it in the VsphereAgent's status.vm.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`

	UpstreamVMRecord `json:",inline"`
}

// PlannedAction is one action the planner decided on the last pass. This operator writes action,
// target, reason and message; an entry the upstream operator wrote has type, name and reason instead,
// and stays valid until this operator's next pass replaces the list.
type PlannedAction struct {
	// Action is what was decided. Always set by this operator.
	// +optional
	// +kubebuilder:validation:Enum=Create;Delete;Release;Wait;Refuse
	Action string `json:"action,omitempty"`
	// Target names the VsphereAgent concerned, if any.
	// +optional
	Target string `json:"target,omitempty"`
	// Reason is a machine-readable reason. Always set by this operator.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains the decision.
	// +optional
	Message string `json:"message,omitempty"`
	// Type is the upstream operator's action (e.g. Noop); this operator never writes it.
	// +optional
	Type string `json:"type,omitempty"`
	// Name is the object the upstream operator's action concerned; this operator never writes it.
	// +optional
	Name string `json:"name,omitempty"`
}

// ISOVersion is one cached ISO file.
type ISOVersion struct {
	// Path is the datastore path "[datastore] prefix/<sha256>.iso".
	Path string `json:"path"`
	// SHA256 is the digest of the ISO bytes.
	SHA256 string `json:"sha256"`
	// SizeBytes is the file size.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// UploadedAt is when the file was cached.
	// +optional
	UploadedAt *metav1.Time `json:"uploadedAt,omitempty"`
	// PruneError is the last failure deleting this file; it is retried on a later refresh.
	// +optional
	PruneError string `json:"pruneError,omitempty"`
}

// ISOStatus is the discovery ISO cache state of a pool.
type ISOStatus struct {
	// URL is the InfraEnv's ISO URL with its query, user info and token removed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Source URL",xDescriptors="urn:alm:descriptor:text"
	URL string `json:"url,omitempty"`
	// URLHash is a SHA-256 of the full URL, used to detect a new URL without storing its token.
	// +optional
	URLHash string `json:"urlHash,omitempty"`
	// Path is the datastore path of the active ISO, attached to new VMs.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Path",xDescriptors="urn:alm:descriptor:text"
	Path string `json:"path,omitempty"`
	// SHA256 is the digest of the active ISO.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO SHA-256",xDescriptors="urn:alm:descriptor:text"
	SHA256 string `json:"sha256,omitempty"`
	// SizeBytes is the size of the active ISO.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Size (bytes)",xDescriptors="urn:alm:descriptor:text"
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// CheckedAt is the last time the source was checked.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Last Checked",xDescriptors="urn:alm:descriptor:text"
	CheckedAt *metav1.Time `json:"checkedAt,omitempty"`
	// UploadedAt is when the active ISO was cached.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Uploaded",xDescriptors="urn:alm:descriptor:text"
	UploadedAt *metav1.Time `json:"uploadedAt,omitempty"`
	// SourceCreatedTime is the InfraEnv status.createdTime the active ISO was fetched for.
	// +optional
	SourceCreatedTime *metav1.Time `json:"sourceCreatedTime,omitempty"`
	// ETag is the validator the server returned, for conditional requests.
	// +optional
	ETag string `json:"etag,omitempty"`
	// LastModified is the Last-Modified validator the server returned.
	// +optional
	LastModified string `json:"lastModified,omitempty"`
	// ForceRefreshToken is the last handled value of the agent-forge.containeroo.ch/force-iso-refresh annotation.
	// +optional
	ForceRefreshToken string `json:"forceRefreshToken,omitempty"`
	// LastError is the last refresh failure; it stays visible after a later success until the next failure-free check.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Last Error",xDescriptors="urn:alm:descriptor:text"
	LastError string `json:"lastError,omitempty"`
	// History lists cached versions, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	History []ISOVersion `json:"history,omitempty"`
}

// ISOEjectionSummary counts the pool's VMs by ISOEjected reason.
type ISOEjectionSummary struct {
	// Ejected counts VMs whose discovery ISO is ejected (ISOEjected=True, reason Ejected).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISOs Ejected",xDescriptors="urn:alm:descriptor:text"
	Ejected int32 `json:"ejected"`
	// NotAttached counts VMs whose drive was found without the pool's ISO although this operator ejected
	// nothing (ISOEjected=True, reason NotAttached: emptied outside the operator).
	// +optional
	NotAttached int32 `json:"notAttached,omitempty"`
	// InProgress counts VMs with an ejection under way (reason EjectionInProgress).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ejections In Progress",xDescriptors="urn:alm:descriptor:text"
	InProgress int32 `json:"inProgress"`
	// Failed counts VMs whose ejection failed or was refused (reason EjectionFailed; retried with backoff).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ejections Failed",xDescriptors="urn:alm:descriptor:text"
	Failed int32 `json:"failed"`
	// Waiting counts VMs waiting for their Agent to report Installed=True (reason WaitingForInstallation).
	// +optional
	Waiting int32 `json:"waiting"`
}

// VsphereAgentPoolStatus is the observed state of a VsphereAgentPool.
type VsphereAgentPoolStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors="urn:alm:descriptor:text"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DesiredReplicas is the NodePool's desired replica count as rendered into Machines.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Desired Replicas",xDescriptors="urn:alm:descriptor:text"
	DesiredReplicas int32 `json:"desiredReplicas"`
	// AgentMachines counts the NodePool's AgentMachines.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="AgentMachines",xDescriptors="urn:alm:descriptor:text"
	AgentMachines int32 `json:"agentMachines"`
	// WaitingAgentMachines counts AgentMachines waiting with NoSuitableAgents (the demand).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Waiting AgentMachines",xDescriptors="urn:alm:descriptor:text"
	WaitingAgentMachines int32 `json:"waitingAgentMachines"`
	// UnreadyAgentMachines counts AgentMachines not Ready.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Unready AgentMachines",xDescriptors="urn:alm:descriptor:text"
	UnreadyAgentMachines int32 `json:"unreadyAgentMachines"`
	// AgentMachinesWithoutAgent counts AgentMachines with no status.agentRef.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="AgentMachines Without Agent",xDescriptors="urn:alm:descriptor:text"
	AgentMachinesWithoutAgent int32 `json:"agentMachinesWithoutAgent"`
	// MatchingAgents counts Agents carrying the pool's labels in the InfraEnv.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Matching Agents",xDescriptors="urn:alm:descriptor:text"
	MatchingAgents int32 `json:"matchingAgents"`
	// BoundAgents counts matching Agents bound to an AgentMachine.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Bound Agents",xDescriptors="urn:alm:descriptor:text"
	BoundAgents int32 `json:"boundAgents"`
	// AvailableAgents counts matching Agents suitable and free to bind.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Available Agents",xDescriptors="urn:alm:descriptor:text"
	AvailableAgents int32 `json:"availableAgents"`
	// VMs counts the VMs owned by the pool.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="VMs",xDescriptors="urn:alm:descriptor:text"
	VMs int32 `json:"vms"`
	// Copies counts the VMs carrying this pool's marker that are not the VM the marker's owner made (their
	// instance UUID is not the owner's UID, or they are templates): clones, templates, restored backups, DR
	// replicas, as the last orphan scan found them. They are reported (Event CopyFound), never destroyed,
	// ejected or counted as VMs or supply.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Copies of VMs",xDescriptors="urn:alm:descriptor:text"
	Copies int32 `json:"copies"`
	// OwnedVMs lists the pool's VMs.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Owned VMs"
	OwnedVMs []OwnedVM `json:"ownedVMs,omitempty"`
	// PlannedActions lists what the planner decided on the last pass.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Planned Actions"
	PlannedActions []PlannedAction `json:"plannedActions,omitempty"`
	// ISO is the discovery ISO cache state.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Discovery ISO"
	ISO *ISOStatus `json:"iso,omitempty"`
	// ISOEjections summarises the ISOEjected conditions of the pool's VMs (a canary pool's progress).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ISO Ejections"
	ISOEjections *ISOEjectionSummary `json:"isoEjections,omitempty"`
	// FailureDomains reports each failure domain (or the one placement): VMs, headroom, availability.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Failure Domains"
	FailureDomains []FailureDomainStatus `json:"failureDomains,omitempty"`
	// Leases counts the static address leases (pools with spec.network).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Static IP Leases"
	Leases *LeaseSummary `json:"leases,omitempty"`
	// Standby reports the warm standby (spec.standby): wanted and ready. Unset while spec.standby is 0.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Warm Standby"
	Standby *StandbyStatus `json:"standby,omitempty"`
	// TemplateDrift reports the bound workers made from an earlier template (condition TemplateCurrent).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Template Drift"
	TemplateDrift *TemplateDriftStatus `json:"templateDrift,omitempty"`
	// RegistrationBreaker is the registration breaker's memory (see RegistrationBreakerStatus). Unset
	// while it never tripped.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Registration Breaker"
	RegistrationBreaker *RegistrationBreakerStatus `json:"registrationBreaker,omitempty"`
	// AntiAffinity lists the cluster modules the pool owns (spec.antiAffinity.mode ClusterModule).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Anti-Affinity"
	AntiAffinity *AntiAffinityStatus `json:"antiAffinity,omitempty"`
	// Conditions: Ready, DemandObserved, CapacitySatisfied, InfraEnvAvailable, VSphereReachable,
	// ISOReady, RegistrationHealthy, NodePoolClaimed, CRDsCurrent, FailureDomainsAvailable, StaticIPsReady, StandbyReady,
	// TemplateCurrent, AntiAffinity.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors="urn:alm:descriptor:io.kubernetes.conditions"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// VsphereAgentPool turns the demand of one HyperShift Agent NodePool into vSphere VMs.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vap,categories=agent-forge
// +kubebuilder:printcolumn:name="Waiting",type=integer,JSONPath=`.status.waitingAgentMachines`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Agents",type=integer,JSONPath=`.status.matchingAgents`
// +kubebuilder:printcolumn:name="VMs",type=integer,JSONPath=`.status.vms`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Standby",type=integer,JSONPath=`.status.standby.ready`
// +kubebuilder:printcolumn:name="Standby-Desired",type=integer,JSONPath=`.status.standby.desired`,priority=1
// +kubebuilder:printcolumn:name="Ejected",type=integer,JSONPath=`.status.isoEjections.ejected`
// +kubebuilder:printcolumn:name="Eject-Failed",type=integer,JSONPath=`.status.isoEjections.failed`,priority=1
// +kubebuilder:printcolumn:name="Drifted",type=integer,JSONPath=`.status.templateDrift.boundWorkers`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="vSphere Agent Pool",resources={{VsphereAgent,v1alpha1},{Agent,v1beta1},{Secret,v1}}
type VsphereAgentPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VsphereAgentPoolSpec   `json:"spec,omitempty"`
	Status VsphereAgentPoolStatus `json:"status,omitempty"`
}

// VsphereAgentPoolList contains a list of VsphereAgentPool.
// +kubebuilder:object:root=true
type VsphereAgentPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VsphereAgentPool `json:"items"`
}
