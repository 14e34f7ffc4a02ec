package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Failure domains: a pool may spread its VMs over several placements (vSphere clusters, resource pools,
// datastores, networks). The names follow OpenShift's install-config vSphere failureDomains and CAPV's
// VSphereFailureDomain topology (computeCluster, resourcePool, datastore, networks, folder), flattened;
// the domain's name is the node's topology.kubernetes.io/zone, its region topology.kubernetes.io/region.

// FailureDomain is one placement of a pool's VMs. Values left empty fall back to spec.vsphere's.
// +kubebuilder:validation:XValidation:rule="!has(self.resourcePool) || !has(self.computeCluster)",message="a failure domain names either computeCluster or resourcePool, not both"
type FailureDomain struct {
	// Name is the failure domain's name and the value of the topology.kubernetes.io/zone label its
	// Agents (and so their nodes) carry.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Zone Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`

	// Region is the value of the topology.kubernetes.io/region label; empty sets no region label.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Region",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Region string `json:"region,omitempty"`

	// ComputeCluster is the vSphere cluster (name or inventory path) whose root resource pool takes the
	// VMs. Empty: resourcePool, else spec.vsphere.resourcePool.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Compute Cluster",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ComputeCluster string `json:"computeCluster,omitempty"`

	// ResourcePool is the resource pool (name or inventory path) for the VMs. Empty: computeCluster's
	// root resource pool, else spec.vsphere.resourcePool.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resource Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ResourcePool string `json:"resourcePool,omitempty"`

	// Datastore is the datastore or datastore cluster for the VM disks. Empty: spec.vsphere.datastoreCluster.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Datastore",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Datastore string `json:"datastore,omitempty"`

	// Network is the port group or network for the VM's NIC. Empty: spec.vsphere.network.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Network string `json:"network,omitempty"`

	// Folder is the VM folder (created if missing). Empty: spec.vsphere.folder.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.contains('..')",message="a failure domain's folder may not contain '..'"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="VM Folder",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Folder string `json:"folder,omitempty"`

	// MaxVMs caps the pool's VMs in this domain; unset means only spec.limits.maxVMs applies.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum VMs",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	MaxVMs *int32 `json:"maxVMs,omitempty"`
}

// FailureDomainStatus is what the pool observed of one failure domain on its last pass.
type FailureDomainStatus struct {
	// Name is the failure domain's name.
	Name string `json:"name"`
	// VMs counts the pool's VMs placed in this domain.
	// +optional
	VMs int32 `json:"vms"`
	// InFlight counts this domain's VMs created but not yet registered.
	// +optional
	InFlight int32 `json:"inFlight"`
	// Headroom is how many more VMs of the pool's template fit in this domain (CPU, memory and disk, with
	// the datastore's safety margin); empty when it could not be measured.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Headroom (VMs)",xDescriptors="urn:alm:descriptor:text"
	Headroom *int32 `json:"headroom,omitempty"`
	// Available is false while the domain takes no new VM; Reason and Message say why.
	// +optional
	Available bool `json:"available"`
	// Reason is InsufficientCapacity, PCIDevicesUnavailable, CreationsFailing, MaxVMsReached or empty.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains the reason with the numbers.
	// +optional
	Message string `json:"message,omitempty"`
	// RetryAfter is when a domain skipped for failing creations is tried again.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`
}

// Failure domain labels put on a prepared Agent (metadata.labels and spec.nodeLabels, which
// assisted-service copies onto the node of a day-2 host once it is Ready).
const (
	LabelTopologyZone   = "topology.kubernetes.io/zone"
	LabelTopologyRegion = "topology.kubernetes.io/region"
	// LabelFailureDomain marks a VsphereAgent with the failure domain its VM is placed in.
	LabelFailureDomain = "agent-forge.containeroo.ch/failure-domain"
)

// ConditionFailureDomainsAvailable is the pool condition saying whether every failure domain (or, without
// any, the pool's one placement) takes new VMs: False names each one that does not and why.
const ConditionFailureDomainsAvailable = "FailureDomainsAvailable"

// Reasons of FailureDomainsAvailable and of a FailureDomainStatus.
const (
	// ReasonAllAvailable: every failure domain takes new VMs.
	ReasonAllAvailable = "AllAvailable"
	// ReasonInsufficientCapacity: a failure domain's cluster lacks the CPU or memory for a VM.
	ReasonInsufficientCapacity = "InsufficientCapacity"
	// ReasonCreationsFailing: creations failed in a failure domain; it is skipped for a backoff.
	ReasonCreationsFailing = "CreationsFailing"
	// ReasonCapacityUnchecked: vCenter did not answer a failure domain's capacity read; creation is not held back.
	ReasonCapacityUnchecked = "CapacityUnchecked"
	// ReasonPCIDevicesUnavailable: no connected host of a failure domain's cluster (or standalone host)
	// offers every PCI passthrough device and vGPU profile of spec.template.hardware.pciDevices; the
	// message names the missing ones. No VM is created there (a Warning Event says so); the hosts are read
	// again every few minutes.
	ReasonPCIDevicesUnavailable = "PCIDevicesUnavailable"
	// ReasonPCIDevicesUnchecked: vCenter did not answer the read of a failure domain's hosts' PCI devices;
	// creation is not held back (vCenter refuses to power on a VM whose device no host has).
	ReasonPCIDevicesUnchecked = "PCIDevicesUnchecked"
)
