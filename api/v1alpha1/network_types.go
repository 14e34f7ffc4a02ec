package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IPPoolReference names a Cluster API IPAM pool (InClusterIPPool, GlobalInClusterIPPool, Infoblox, NetBox, ...)
// in the pool's namespace, the shape CAPV's addressesFromPools uses (a typed local object reference).
type IPPoolReference struct {
	// APIGroup of the IPAM pool kind, e.g. ipam.cluster.x-k8s.io.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="API Group",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	APIGroup string `json:"apiGroup"`
	// Kind of the IPAM pool, e.g. InClusterIPPool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Kind string `json:"kind"`
	// Name of the IPAM pool.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Name string `json:"name"`
}

// NetworkRoute is one extra static route of the VM's interface (CAPV's NetworkRouteSpec).
type NetworkRoute struct {
	// To is the destination network in CIDR notation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="route destination must be a CIDR, e.g. 10.0.0.0/8"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Destination",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	To string `json:"to"`
	// Via is the next-hop address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="route next hop must be an IP address"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Next Hop",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Via string `json:"via"`
	// Metric is the route metric.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Metric",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	Metric *int32 `json:"metric,omitempty"`
}

// NetworkSpec gives the pool's VMs static addresses from Cluster API IPAM pools instead of DHCP. Each VM
// gets a MAC in VMware's static range and an address claimed from the pool; an NMStateConfig selected by
// the InfraEnv puts the address into the discovery image before the VM is created.
type NetworkSpec struct {
	// AddressesFromPools are the IPAM pools the VM's address is claimed from (one address per VM, from
	// the first pool: the VM has one NIC).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Addresses From Pools"
	AddressesFromPools []IPPoolReference `json:"addressesFromPools"`

	// Nameservers are the DNS servers written into the VM's network configuration.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="self.all(s, isIP(s))",message="spec.network.nameservers must be IP addresses"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DNS Servers",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Nameservers []string `json:"nameservers,omitempty"`

	// Routes are extra static routes besides the default route through the pool's gateway.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Extra Routes",xDescriptors="urn:alm:descriptor:com.tectonic.ui:advanced"
	Routes []NetworkRoute `json:"routes,omitempty"`

	// SpareLeases is how many addresses (claim, MAC, NMStateConfig) are kept prepared ahead of demand, so
	// a burst waits for at most one discovery image regeneration.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Spare Leases",xDescriptors="urn:alm:descriptor:com.tectonic.ui:number"
	SpareLeases int32 `json:"spareLeases,omitempty"`

	// InterfaceName is the guest's name of the NIC the address goes on (RHCOS names a vmxnet3 NIC ens192).
	// +optional
	// +kubebuilder:default=ens192
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-a-zA-Z0-9_.]*$`
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Interface Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	InterfaceName string `json:"interfaceName,omitempty"`
}

// StaticIPStatus is a VM's static address lease.
type StaticIPStatus struct {
	// Lease names the IPAddressClaim (and NMStateConfig) of the VM's address.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Lease",xDescriptors="urn:alm:descriptor:text"
	Lease string `json:"lease,omitempty"`
	// Address is the leased address with its prefix, e.g. 10.0.0.21/24.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Static IP",xDescriptors="urn:alm:descriptor:text"
	Address string `json:"address,omitempty"`
	// ConfigCreatedAt is when the lease's NMStateConfig was created.
	// +optional
	ConfigCreatedAt *metav1.Time `json:"configCreatedAt,omitempty"`
	// ImageCreatedAt is the InfraEnv image version (status.createdTime) of the ISO the VM was created
	// with; it is after ConfigCreatedAt, so the image carries the VM's network configuration.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Image Version",xDescriptors="urn:alm:descriptor:text"
	ImageCreatedAt *metav1.Time `json:"imageCreatedAt,omitempty"`
}

// LeaseSummary counts a pool's static address leases.
type LeaseSummary struct {
	// Ready counts free leases whose NMStateConfig exists (ready for a VM once the image carries it).
	Ready int32 `json:"ready"`
	// Assigned counts leases held by a VM.
	Assigned int32 `json:"assigned"`
	// Pending counts leases waiting for their address or NMStateConfig.
	Pending int32 `json:"pending"`
	// Retained counts leases kept with VMs retained by cleanupPolicy Retain.
	// +optional
	Retained int32 `json:"retained,omitempty"`
}

// ConditionStaticIPsReady reports the pool's address leases (only for pools with spec.network); its
// reasons are in reasons_leases.go.
const ConditionStaticIPsReady = "StaticIPsReady"
