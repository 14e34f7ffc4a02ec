package v1alpha1

import "slices"

// Anti-affinity: a pool may ask vSphere DRS to keep its VMs on different ESXi hosts, through a vSphere
// cluster module (the vAPI object /api/vcenter/cluster/modules that CAPV uses for the same purpose):
// one module per compute cluster the pool places VMs into, created and owned by the pool, its ID kept
// in status.antiAffinity. DRS treats the members of one module as a soft VM-VM anti-affinity group. See
// docs/anti-affinity.md for what the soft rule guarantees and what it does not.

// AntiAffinityMode says how a pool keeps its VMs apart.
// +kubebuilder:validation:Enum=None;ClusterModule
type AntiAffinityMode string

const (
	// AntiAffinityNone asks nothing of DRS (the default; the pool behaves as before).
	AntiAffinityNone AntiAffinityMode = "None"
	// AntiAffinityClusterModule puts the pool's VMs of each compute cluster into a vSphere cluster module
	// the pool creates and owns, which DRS keeps on different hosts where it can.
	AntiAffinityClusterModule AntiAffinityMode = "ClusterModule"
)

// AntiAffinitySpec asks vSphere to keep the pool's VMs on different ESXi hosts.
type AntiAffinitySpec struct {
	// Mode is None (default) or ClusterModule: one vSphere cluster module per compute cluster the pool
	// places into (per failure domain, else the cluster owning spec.vsphere.resourcePool), each new VM
	// added to its module before it is powered on. A soft rule: DRS keeps the VMs apart when it can
	// (see docs/anti-affinity.md). Needs vCenter 7.0 Update 1 or later and DRS enabled on the cluster;
	// without them VMs are still created and condition AntiAffinity says the rule is not in force.
	// +optional
	// +kubebuilder:default=None
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Anti-Affinity Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:None","urn:alm:descriptor:com.tectonic.ui:select:ClusterModule","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Mode AntiAffinityMode `json:"mode,omitempty"`
}

// Enabled reports whether the pool asks for cluster-module anti-affinity.
func (a *AntiAffinitySpec) Enabled() bool {
	return a != nil && a.Mode == AntiAffinityClusterModule
}

// ClusterModuleStatus is one cluster module the pool created and owns.
type ClusterModuleStatus struct {
	// FailureDomains are the failure domains whose VMs the module holds (those placing into its
	// cluster); empty for a pool without failure domains.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	FailureDomains []string `json:"failureDomains,omitempty"`
	// Cluster is the compute cluster's name.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// ClusterRef is the compute cluster's managed object ID (domain-c…), the module's scope.
	ClusterRef string `json:"clusterRef"`
	// ModuleID is the cluster module's ID. The pool deletes only modules named here.
	ModuleID string `json:"moduleID"`
}

// AntiAffinityStatus lists the cluster modules the pool owns.
type AntiAffinityStatus struct {
	// Modules are the pool's cluster modules, one per compute cluster (and failure domain).
	// +optional
	// +listType=map
	// +listMapKey=clusterRef
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Cluster Modules"
	Modules []ClusterModuleStatus `json:"modules,omitempty"`
}

// ModuleFor returns the recorded module that holds the VMs of the failure domain named ("" for a pool
// without failure domains); ok is false when none is recorded.
func (s *AntiAffinityStatus) ModuleFor(failureDomain string) (m ClusterModuleStatus, ok bool) {
	if s == nil {
		return ClusterModuleStatus{}, false
	}
	for _, m := range s.Modules {
		if slices.Contains(m.FailureDomains, failureDomain) || (failureDomain == "" && len(m.FailureDomains) == 0) {
			return m, true
		}
	}
	return ClusterModuleStatus{}, false
}

// ConditionAntiAffinity says whether the pool's anti-affinity is in force: set only while
// spec.antiAffinity.mode is ClusterModule (removed otherwise). False never stops VM creation: a stalled
// autoscaler is worse than co-located workers.
const ConditionAntiAffinity = "AntiAffinity"

// Reasons of AntiAffinity, and of the Events that announce them.
const (
	// ReasonClusterModulesReady: every compute cluster of the pool has its module and DRS enabled.
	ReasonClusterModulesReady = "ClusterModulesReady"
	// ReasonDRSDisabled: DRS is off on a compute cluster of the pool; a module is kept, but nothing keeps
	// the VMs apart until DRS is turned on.
	ReasonDRSDisabled = "DRSDisabled"
	// ReasonClusterModulesUnsupported: vCenter has no cluster-modules API (older than 7.0 Update 1); VMs
	// are created without anti-affinity.
	ReasonClusterModulesUnsupported = "ClusterModulesUnsupported"
	// ReasonNoComputeCluster: a placement's resource pool belongs to a standalone host, not a cluster:
	// there is no DRS to keep VMs apart.
	ReasonNoComputeCluster = "NoComputeCluster"
	// ReasonClusterModuleFailed: reading, creating or deleting a cluster module failed (retried); the
	// message names the cluster and the error.
	ReasonClusterModuleFailed = "ClusterModuleFailed"
	// ReasonClusterModuleCreated: the pool created a cluster module (Normal Event).
	ReasonClusterModuleCreated = "ClusterModuleCreated"
	// ReasonClusterModuleAdopted: the pool found a module whose members are its own VMs (a crash between
	// creating the module and writing status, or a status lost) and recorded it (Normal Event).
	ReasonClusterModuleAdopted = "ClusterModuleAdopted"
	// ReasonClusterModuleDeleted: the pool deleted a module it owns (Normal Event).
	ReasonClusterModuleDeleted = "ClusterModuleDeleted"
	// ReasonClusterModuleJoinFailed: a VM could not be added to (or removed from) its cluster module; the
	// VM is kept and the step retried (VsphereAgent condition ClusterModuleMember and a Warning Event).
	ReasonClusterModuleJoinFailed = "ClusterModuleJoinFailed"
	// ReasonClusterModuleJoined: the VM is a member of its pool's cluster module.
	ReasonClusterModuleJoined = "ClusterModuleJoined"
)

// ConditionClusterModuleMember is a VsphereAgent's membership of its pool's cluster module: set only
// while the pool asks for anti-affinity.
const ConditionClusterModuleMember = "ClusterModuleMember"
