package poolspec

import (
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Placement is where one failure domain puts a VM, the pool's values filled in where it gives none.
type Placement struct {
	Name, Region                                    string
	ResourcePool, DatastoreCluster, Network, Folder string
	MaxVMs                                          *int32
}

// Domains lists the pool's failure domains; a pool without any has one, named "", with its own
// placement.
func Domains(pool *afv1.VsphereAgentPool) []Placement {
	v := pool.Spec.VSphere
	base := Placement{ResourcePool: v.ResourcePool, DatastoreCluster: v.DatastoreCluster, Network: v.Network, Folder: v.Folder}
	if base.Folder == "" {
		base.Folder = pool.Spec.HostedClusterRef.Name
	}
	if len(v.FailureDomains) == 0 {
		return []Placement{base}
	}
	out := make([]Placement, 0, len(v.FailureDomains))
	for _, fd := range v.FailureDomains {
		d := base
		d.Name, d.Region, d.MaxVMs = fd.Name, fd.Region, fd.MaxVMs
		switch {
		case fd.ResourcePool != "":
			d.ResourcePool = fd.ResourcePool
		case fd.ComputeCluster != "":
			d.ResourcePool = strings.TrimSuffix(fd.ComputeCluster, "/") + "/Resources" // the cluster's root pool
		}
		if fd.Datastore != "" {
			d.DatastoreCluster = fd.Datastore
		}
		if fd.Network != "" {
			d.Network = fd.Network
		}
		if fd.Folder != "" {
			d.Folder = fd.Folder
		}
		out = append(out, d)
	}
	return out
}

// DomainOf returns the placement of the named failure domain of the pool.
func DomainOf(pool *afv1.VsphereAgentPool, name string) (Placement, bool) {
	for _, d := range Domains(pool) {
		if d.Name == name {
			return d, true
		}
	}
	return Placement{}, false
}

// VMNeed is what one VM of the pool's template takes from a placement: its vCPUs and memory, and on the
// boot datastore its swap file (memory minus reservation; none with PCI devices, whose VMs reserve all) and the disks provisioned thick there (the boot
// disk with diskEagerlyScrub, data disks Thick or EagerlyZeroed without a datastore of their own).
func VMNeed(pool *afv1.VsphereAgentPool) vsphere.VMNeed {
	t := pool.Spec.Template
	n := vsphere.VMNeed{NumCPUs: t.NumCPUs, MemoryMiB: t.MemoryMiB}
	if pool.Spec.VSphere.DiskEagerlyScrub { // eager-zeroed thick; otherwise the disk is thin
		n.ThickDiskGiB = int64(t.DiskGiB)
	}
	if hw := t.Hardware; hw != nil {
		if hw.MemoryReservationMiB != nil {
			n.MemoryReservationMiB = *hw.MemoryReservationMiB
		}
		if hw.HasPCIDevices() { // all memory reserved: no swap file
			n.MemoryReservationMiB = t.MemoryMiB
		}
		for _, d := range hw.DataDisks {
			if d.Datastore == "" && (d.ProvisioningMode == afv1.ProvisioningThick || d.ProvisioningMode == afv1.ProvisioningEagerlyZeroed) {
				n.ThickDiskGiB += int64(d.SizeGiB)
			}
		}
	}
	return n
}

// DomainLabel names a domain in messages.
func DomainLabel(name string) string {
	if name == "" {
		return "the pool's placement"
	}
	return "failure domain " + name
}

// InDomain is " in failure domain <name>" for messages, "" without failure domains.
func InDomain(name string) string {
	if name == "" {
		return ""
	}
	return " in failure domain " + name
}

// TopologyLabels are the labels a VM's Agent carries for its failure domain: topology.kubernetes.io/zone
// and, when the domain names one, topology.kubernetes.io/region. None without a failure domain.
func TopologyLabels(pool *afv1.VsphereAgentPool, domain string) map[string]string {
	if domain == "" {
		return nil
	}
	out := map[string]string{afv1.LabelTopologyZone: domain}
	if d, ok := DomainOf(pool, domain); ok && d.Region != "" {
		out[afv1.LabelTopologyRegion] = d.Region
	}
	return out
}

// PlacementSpec is the placement of one failure domain of the pool (see Domains).
func PlacementSpec(pool *afv1.VsphereAgentPool, d Placement) vsphere.PlacementSpec {
	v := pool.Spec.VSphere
	spec := vsphere.PlacementSpec{Datacenter: v.Datacenter, DatastoreCluster: d.DatastoreCluster, ISODatastore: v.ISODatastore,
		ResourcePool: d.ResourcePool, Folder: d.Folder, Network: d.Network, Tags: v.VMTags}
	if hw := pool.Spec.Template.Hardware; hw != nil {
		spec.StoragePolicy = hw.StoragePolicyName
		for _, dd := range hw.DataDisks {
			if dd.Datastore != "" {
				spec.DataDiskDatastores = append(spec.DataDiskDatastores, dd.Datastore)
			}
		}
	}
	return spec
}

// AdditionalNICs are the VM's NICs after the first (spec.vsphere.additionalNetworks), in order, without
// MACs (a static-IP lease gives those of the NICs with static addresses); an adapter type left empty is
// spec.vsphere.networkAdapterType.
func AdditionalNICs(pool *afv1.VsphereAgentPool) []vsphere.NIC {
	v := pool.Spec.VSphere
	var out []vsphere.NIC
	for _, a := range v.AdditionalNetworks {
		adapter := a.AdapterType
		if adapter == "" {
			adapter = v.NetworkAdapterType
		}
		out = append(out, vsphere.NIC{Network: a.Network, Adapter: adapter})
	}
	return out
}
