package vcsim

import (
	"fmt"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Capacity knobs: govmomi's simulator fills a cluster's summary from its hosts' hardware (effectiveMemory
// in bytes where vCenter reports MB) and a datastore's from a fixed 1 TB per host, and never changes
// either as VMs come and go. Start sets every cluster and datastore to a large lab's numbers in vCenter's
// units (DefaultClusterCapacity, DefaultDatastoreBytes); SetClusterCapacity and SetDatastoreSpace then
// shrink or fill one, writing the same properties a real vCenter reports: ClusterComputeResource
// summary.effectiveCpu (MHz), summary.effectiveMemory (MB), summary.totalCpu, summary.numCpuCores and
// summary.usageSummary.cpuDemandMhz / memDemandMB; Datastore summary.capacity and summary.freeSpace (bytes).

// ClusterCapacity is what a cluster reports about its CPU and memory.
type ClusterCapacity struct {
	// NumCPUCores and TotalCPUMHz are the hosts' physical cores and their combined speed.
	NumCPUCores int16 `json:"numCpuCores"`
	TotalCPUMHz int32 `json:"totalCpuMhz"`
	// EffectiveCPUMHz and EffectiveMemoryMB are what the cluster's good hosts offer to VMs.
	EffectiveCPUMHz   int32 `json:"effectiveCpuMhz"`
	EffectiveMemoryMB int64 `json:"effectiveMemoryMb"`
	// CPUDemandMHz and MemDemandMB are what runs already (usageSummary).
	CPUDemandMHz int32 `json:"cpuDemandMhz"`
	MemDemandMB  int32 `json:"memDemandMb"`
}

// DefaultClusterCapacity is a cluster of 3 hosts with 1024 cores at 2294 MHz and 16 TiB each, idle.
var DefaultClusterCapacity = ClusterCapacity{NumCPUCores: 3072, TotalCPUMHz: 3072 * 2294, EffectiveCPUMHz: 3072 * 2294,
	EffectiveMemoryMB: 3 * 16 << 20}

// DefaultDatastoreBytes is every datastore's capacity (and free space) at Start: 256 TiB, room for the
// scale bench's 1 000 VMs of 100 GiB (the worker disk assisted-service requires) and their ISOs.
const DefaultDatastoreBytes = int64(256) << 40

type (
	clusterCapacityReq struct {
		Cluster  string          `json:"cluster"`
		Capacity ClusterCapacity `json:"capacity"`
	}
	datastoreSpaceReq struct {
		Datastore     string `json:"datastore"`
		CapacityBytes int64  `json:"capacityBytes"`
		FreeBytes     int64  `json:"freeBytes"`
	}
)

// SetClusterCapacity sets the CPU and memory summary of the cluster named cluster.
func (e *Env) SetClusterCapacity(cluster string, c ClusterCapacity) error {
	if e.ctl != nil {
		return e.ctl.call("capacity/cluster", clusterCapacityReq{Cluster: cluster, Capacity: c}, nil)
	}
	return e.withEntity("ClusterComputeResource", cluster, func(obj mo.Entity) {
		setClusterSummary(obj.(*simulator.ClusterComputeResource), c)
	})
}

// SetDatastoreSpace sets the capacity and free space of the datastore named datastore.
func (e *Env) SetDatastoreSpace(datastore string, capacityBytes, freeBytes int64) error {
	if e.ctl != nil {
		return e.ctl.call("capacity/datastore", datastoreSpaceReq{Datastore: datastore, CapacityBytes: capacityBytes, FreeBytes: freeBytes}, nil)
	}
	return e.withEntity("Datastore", datastore, func(obj mo.Entity) {
		setDatastoreSpace(obj.(*simulator.Datastore), capacityBytes, freeBytes)
	})
}

// withEntity runs f on the entity of kind named name, holding its lock.
func (e *Env) withEntity(kind, name string, f func(mo.Entity)) error {
	for _, obj := range e.Map().All(kind) {
		match := false
		e.withLock(obj, func() { match = obj.Entity().Name == name })
		if match {
			e.withLock(obj, func() { f(obj) })
			return nil
		}
	}
	return fmt.Errorf("vcsim: no %s named %q", kind, name)
}

func setClusterSummary(cl *simulator.ClusterComputeResource, c ClusterCapacity) {
	s, ok := cl.Summary.(*types.ClusterComputeResourceSummary)
	if !ok {
		s = &types.ClusterComputeResourceSummary{}
		cl.Summary = s
	}
	s.NumCpuCores, s.TotalCpu, s.EffectiveCpu, s.EffectiveMemory = c.NumCPUCores, c.TotalCPUMHz, c.EffectiveCPUMHz, c.EffectiveMemoryMB
	s.TotalMemory = c.EffectiveMemoryMB << 20
	if s.UsageSummary == nil {
		s.UsageSummary = &types.ClusterUsageSummary{}
	}
	s.UsageSummary.CpuDemandMhz, s.UsageSummary.MemDemandMB = c.CPUDemandMHz, c.MemDemandMB
	s.UsageSummary.TotalCpuCapacityMhz, s.UsageSummary.TotalMemCapacityMB = c.EffectiveCPUMHz, int32(min(c.EffectiveMemoryMB, 1<<31-1))
}

func setDatastoreSpace(ds *simulator.Datastore, capacityBytes, freeBytes int64) {
	ds.Summary.Capacity, ds.Summary.FreeSpace = capacityBytes, freeBytes
	if info := ds.Info.GetDatastoreInfo(); info != nil {
		info.FreeSpace = freeBytes
	}
}

// prepareCapacity gives every cluster and datastore the defaults (see the package comment above).
func (e *Env) prepareCapacity() {
	for _, obj := range e.Map().All("ClusterComputeResource") {
		if cl, ok := obj.(*simulator.ClusterComputeResource); ok {
			e.withLock(obj, func() { setClusterSummary(cl, DefaultClusterCapacity) })
		}
	}
	for _, obj := range e.Map().All("Datastore") {
		if ds, ok := obj.(*simulator.Datastore); ok {
			e.withLock(obj, func() { setDatastoreSpace(ds, DefaultDatastoreBytes, DefaultDatastoreBytes) })
		}
	}
}

// Zone names the inventory of cluster i (0-based) of a simulator started with Options.Clusters > 1:
// cluster DC0_C<i>, its root resource pool and datastore LocalDS_<2+i> (LocalDS_0 and LocalDS_1 stay
// the shared datastore and the datastore cluster's member).
type Zone struct {
	Cluster, ResourcePool, Datastore string
}

// ZoneOf returns the names of cluster i.
func ZoneOf(i int) Zone {
	c := fmt.Sprintf("DC0_C%d", i)
	return Zone{Cluster: c, ResourcePool: c + "/Resources", Datastore: fmt.Sprintf("LocalDS_%d", 2+i)}
}
