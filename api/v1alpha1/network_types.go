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
// gets a MAC in VMware's static range and an address claimed from each pool; an NMStateConfig selected by
// the InfraEnv puts the addresses into the discovery image before the VM is created. It configures the
// VM's first NIC (spec.vsphere.network, the machine network); spec.vsphere.additionalNetworks name their
// own pools.
type NetworkSpec struct {
	// AddressesFromPools are the IPAM pools the first NIC's addresses are claimed from: one address per
	// pool and VM. Two pools make the NIC dual-stack: one must hand out IPv4 addresses, the other IPv6
	// (checked when the addresses arrive: two of one family are refused with InvalidIPAddress).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="self.size() < 2 || self[0].apiGroup != self[1].apiGroup || self[0].kind != self[1].kind || self[0].name != self[1].name",message="addressesFromPools must name two different pools (one IPv4, one IPv6)"
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Addresses From Pools"
	AddressesFromPools []IPPoolReference `json:"addressesFromPools"`

	// Nameservers are the DNS servers (IPv4 or IPv6) written into the VM's network configuration.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:MaxLength=39
	// +kubebuilder:validation:XValidation:rule="self.all(s, isIP(s))",message="spec.network.nameservers must be IP addresses"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DNS Servers",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Nameservers []string `json:"nameservers,omitempty"`

	// Routes are extra static routes besides the default routes through the first NIC's gateways (IPv4
	// and IPv6 alike); each goes out of the NIC whose static subnet holds its next hop, else the first.
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

// AdditionalNetwork is one NIC of the VM after the first (spec.vsphere.network). Without
// addressesFromPools it gets its address by DHCP (or none); with them, static addresses claimed like the
// first NIC's and written into the same NMStateConfig (the pool needs spec.network then).
type AdditionalNetwork struct {
	// Network is the port group or network name of the NIC (failure domains do not override it).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network",xDescriptors="urn:alm:descriptor:com.tectonic.ui:text"
	Network string `json:"network"`

	// AdapterType is the NIC model. Empty: spec.vsphere.networkAdapterType.
	// +optional
	// +kubebuilder:validation:Enum=vmxnet3;e1000;e1000e
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Adapter Type",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:vmxnet3","urn:alm:descriptor:com.tectonic.ui:select:e1000","urn:alm:descriptor:com.tectonic.ui:select:e1000e","urn:alm:descriptor:com.tectonic.ui:advanced"}
	AdapterType string `json:"adapterType,omitempty"`

	// AddressesFromPools are the IPAM pools this NIC's static addresses are claimed from: at most one
	// IPv4 and one IPv6 pool. Empty: DHCP. Its gateways are not default routes (the first NIC's are):
	// use spec.network.routes for networks behind this NIC.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="self.size() < 2 || self[0].apiGroup != self[1].apiGroup || self[0].kind != self[1].kind || self[0].name != self[1].name",message="addressesFromPools must name two different pools (one IPv4, one IPv6)"
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Addresses From Pools"
	AddressesFromPools []IPPoolReference `json:"addressesFromPools,omitempty"`

	// InterfaceName is the name the NMStateConfig gives the NIC; assisted-service maps it to the host's
	// NIC by MAC, so it is a label. Empty: ens224 for the second NIC, ens256 for the third, and so on.
	// +optional
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
	// Address is the leased address with its prefix, e.g. 10.0.0.21/24: the first NIC's first address.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Static IP",xDescriptors="urn:alm:descriptor:text"
	Address string `json:"address,omitempty"`
	// Addresses are every leased address with its prefix, NIC by NIC in the NICs' order, each NIC's
	// addresses in the order of its addressesFromPools (e.g. 10.0.0.21/24, fd00::21/64, 192.168.5.7/24).
	// +optional
	// +listType=atomic
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Static IPs",xDescriptors="urn:alm:descriptor:text"
	Addresses []string `json:"addresses,omitempty"`
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
