package vsphere

import (
	"context"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// CapacitySpec names where one VM of a pool would be placed: the compute (resource pool, whose owner
// cluster or host supplies CPU and memory) and the storage (datastore or datastore cluster).
type CapacitySpec struct {
	Datacenter string
	// ResourcePool empty means the datacenter's only resource pool.
	ResourcePool string
	// DatastoreCluster is a datastore cluster or a single datastore.
	DatastoreCluster string
}

// Capacity is what vCenter reports about the free room of one placement, in vCenter's units.
type Capacity struct {
	// Compute names the cluster (ClusterComputeResource) or standalone host (ComputeResource) that owns
	// the resource pool.
	Compute string
	// EffectiveCPUMHz and EffectiveMemoryMiB are summary.effectiveCpu (MHz) and summary.effectiveMemory
	// (MB) of the owner: the resources of its hosts available to run VMs.
	EffectiveCPUMHz    int64
	EffectiveMemoryMiB int64
	// UsedCPUMHz and UsedMemoryMiB are what runs or is reserved already: the larger of the demand and the
	// reservations of a cluster's summary.usageSummary (cpuDemandMhz/cpuReservationMhz,
	// memDemandMB/memReservationMB); 0 for a standalone host, whose summary has no usage.
	UsedCPUMHz    int64
	UsedMemoryMiB int64
	// CoreMHz is the speed of one physical core (summary.totalCpu / summary.numCpuCores): a vCPU running
	// flat out uses one.
	CoreMHz int64
	// Datastores are the datastore or the datastore cluster's member datastores (summary.capacity and
	// summary.freeSpace, bytes).
	Datastores []DatastoreSpace
}

// DatastoreSpace is one datastore's summary.
type DatastoreSpace struct {
	Name          string
	CapacityBytes int64
	FreeBytes     int64
}

// VMNeed is what one VM of a template takes from a placement.
type VMNeed struct {
	NumCPUs   int32
	MemoryMiB int64
	// MemoryReservationMiB is reserved memory: the power-on swap file (.vswp) is memory minus reservation.
	MemoryReservationMiB int64
	// ThickDiskGiB are the disks allocated in full at creation (thick, eager-zeroed thick); thin disks
	// take no space up front and are not counted.
	ThickDiskGiB int64
}

// DatastoreSafetyMargin is the fraction of a datastore's capacity kept free: a datastore fuller than
// that after one more VM takes none (thin disks grow, snapshots and logs need room).
const DatastoreSafetyMargin = 0.10

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// DiskBytes is what one VM allocates on its datastore at creation and power-on.
func (n VMNeed) DiskBytes() int64 {
	swap := n.MemoryMiB - n.MemoryReservationMiB
	if swap < 0 {
		swap = 0
	}
	return n.ThickDiskGiB*gib + swap*mib
}

// CPUMHz is the CPU one VM takes when every vCPU runs flat out.
func (n VMNeed) CPUMHz(coreMHz int64) int64 { return int64(n.NumCPUs) * coreMHz }

// Headroom is how many VMs of need still fit, and when none does, why (with the numbers).
type Headroom struct {
	VMs int
	// Short is empty when at least one VM fits; else each resource that lacks room, e.g.
	// "memory: 4096 MiB needed, 1024 MiB free of 262144 MiB".
	Short []string
}

// HeadroomFor counts the VMs of need that fit in c: the smallest of the CPU, memory and disk counts. On
// a datastore cluster each member is counted on its own (a VM's disks land on one datastore).
func HeadroomFor(c Capacity, need VMNeed) Headroom {
	const unlimited = int(^uint(0) >> 1)
	fit := func(free, per int64) int {
		if per <= 0 {
			return unlimited
		}
		if free <= 0 {
			return 0
		}
		return int(free / per)
	}
	var h Headroom
	cpuNeed := need.CPUMHz(c.CoreMHz)
	cpuFree := c.EffectiveCPUMHz - c.UsedCPUMHz
	cpu := fit(cpuFree, cpuNeed)
	if cpu == 0 {
		h.Short = append(h.Short, fmt.Sprintf("CPU on %s: %d MHz needed (%d vCPU x %d MHz), %d MHz free of %d MHz effective",
			c.Compute, cpuNeed, need.NumCPUs, c.CoreMHz, max(cpuFree, 0), c.EffectiveCPUMHz))
	}
	memFree := c.EffectiveMemoryMiB - c.UsedMemoryMiB
	mem := fit(memFree, need.MemoryMiB)
	if mem == 0 {
		h.Short = append(h.Short, fmt.Sprintf("memory on %s: %d MiB needed, %d MiB free of %d MiB effective",
			c.Compute, need.MemoryMiB, max(memFree, 0), c.EffectiveMemoryMiB))
	}
	disk, diskNeed := 0, need.DiskBytes()
	var full []string
	for _, ds := range c.Datastores {
		usable := ds.FreeBytes - int64(float64(ds.CapacityBytes)*DatastoreSafetyMargin)
		n := fit(usable, diskNeed)
		if n == 0 {
			full = append(full, fmt.Sprintf("%s %d GiB free of %d GiB", ds.Name, ds.FreeBytes/gib, ds.CapacityBytes/gib))
		}
		if n == unlimited || disk == unlimited {
			disk = unlimited
		} else {
			disk += n
		}
	}
	if disk == 0 {
		h.Short = append(h.Short, fmt.Sprintf("disk: %d GiB needed plus %d%% of the datastore kept free (%s)",
			(diskNeed+gib-1)/gib, int(DatastoreSafetyMargin*100), strings.Join(full, ", ")))
	}
	h.VMs = min(cpu, mem, disk)
	return h
}

// ReadCapacity reads, read-only, the capacity of the placement of spec: its resource pool's owner summary
// and its datastores' summaries.
func (c *client) ReadCapacity(ctx context.Context, spec CapacitySpec) (*Capacity, error) {
	out, err := c.readCapacity(ctx, spec)
	return out, observe("capacity", err)
}

// poolOwner finds the datacenter's resource pool and the compute resource that owns it (a cluster or a
// standalone host): where the pool's VMs run. Errors of the owner read are classified for op.
func (c *client) poolOwner(ctx context.Context, datacenter, resourcePool, op string) (*dcCache, types.ManagedObjectReference, error) {
	d, err := c.datacenter(ctx, datacenter)
	if err != nil {
		return nil, types.ManagedObjectReference{}, err
	}
	rp, err := d.pool(ctx, resourcePool)
	if err != nil {
		return nil, types.ManagedObjectReference{}, err
	}
	var pool mo.ResourcePool
	if err := c.pc().RetrieveOne(ctx, rp.Reference(), []string{"owner"}, &pool); err != nil {
		return nil, types.ManagedObjectReference{}, classify(op, err)
	}
	return d, pool.Owner, nil
}

func (c *client) readCapacity(ctx context.Context, spec CapacitySpec) (*Capacity, error) {
	d, ownerRef, err := c.poolOwner(ctx, spec.Datacenter, spec.ResourcePool, "ReadCapacity")
	if err != nil {
		return nil, err
	}
	out := &Capacity{}
	var owner mo.ComputeResource
	if err := c.pc().RetrieveOne(ctx, ownerRef, []string{"name", "summary"}, &owner); err != nil {
		return nil, classify("ReadCapacity", err)
	}
	out.Compute = owner.Name
	if owner.Summary != nil {
		s := owner.Summary.GetComputeResourceSummary()
		out.EffectiveCPUMHz, out.EffectiveMemoryMiB = int64(s.EffectiveCpu), s.EffectiveMemory
		if s.NumCpuCores > 0 {
			out.CoreMHz = int64(s.TotalCpu) / int64(s.NumCpuCores)
		}
		if cs, ok := owner.Summary.(*types.ClusterComputeResourceSummary); ok && cs.UsageSummary != nil {
			u := cs.UsageSummary
			out.UsedCPUMHz = int64(max(u.CpuDemandMhz, u.CpuReservationMhz))
			out.UsedMemoryMiB = int64(max(u.MemDemandMB, u.MemReservationMB))
		}
	}
	t, err := d.storageFor(ctx, spec.DatastoreCluster)
	if err != nil {
		return nil, err
	}
	var refs []types.ManagedObjectReference
	if t.pod != nil {
		var pod mo.StoragePod
		if err := c.pc().RetrieveOne(ctx, t.pod.Reference(), []string{"childEntity"}, &pod); err != nil {
			return nil, classify("ReadCapacity", err)
		}
		for _, ref := range pod.ChildEntity {
			if ref.Type == "Datastore" {
				refs = append(refs, ref)
			}
		}
	} else {
		refs = append(refs, t.ds.Reference())
	}
	if len(refs) > 0 {
		var dss []mo.Datastore
		if err := c.pc().Retrieve(ctx, refs, []string{"name", "summary"}, &dss); err != nil {
			return nil, classify("ReadCapacity", err)
		}
		for _, ds := range dss {
			out.Datastores = append(out.Datastores, DatastoreSpace{Name: ds.Name, CapacityBytes: ds.Summary.Capacity, FreeBytes: ds.Summary.FreeSpace})
		}
	}
	return out, nil
}

// Less returns c with one VM of need taken from it: its CPU and memory counted as used, its disk taken
// from the datastore with the most usable room (the one HeadroomFor counts a VM on first). It is how a
// reading stays right for the VMs created after it, by any pool placing VMs there, until the next one.
func (c Capacity) Less(need VMNeed) Capacity {
	c.UsedCPUMHz += need.CPUMHz(c.CoreMHz)
	c.UsedMemoryMiB += need.MemoryMiB
	c.Datastores = append([]DatastoreSpace(nil), c.Datastores...)
	best, bestUsable := -1, int64(0)
	for i, ds := range c.Datastores {
		if usable := ds.FreeBytes - int64(float64(ds.CapacityBytes)*DatastoreSafetyMargin); best < 0 || usable > bestUsable {
			best, bestUsable = i, usable
		}
	}
	if best >= 0 {
		c.Datastores[best].FreeBytes -= need.DiskBytes()
	}
	return c
}
