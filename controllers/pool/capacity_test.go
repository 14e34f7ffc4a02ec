package pool

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// Pools placing VMs in one resource pool and datastore of one vCenter share vCenter's reading: one read
// per interval whatever the number of pools, and a VM any of them creates counts against all of them.
func TestPoolsOnOnePlacementShareTheReading(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	vs := vspherefake.New(clk)
	// memory for exactly 4 VMs of 16 GiB; CPU and disk roomy.
	vs.SetCapacity(vsphere.Capacity{Compute: "C0", EffectiveCPUMHz: 1 << 30, CoreMHz: 2_000, EffectiveMemoryMiB: 64 * 1024,
		Datastores: []vsphere.DatastoreSpace{{Name: "ds", CapacityBytes: 100 << 40, FreeBytes: 90 << 40}}})
	need := vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16 * 1024}
	spec := vsphere.CapacitySpec{Datacenter: "dc", ResourcePool: "rp", DatastoreCluster: "ds"}
	var tr domainTracker
	read := func(pool, server string) domainReading {
		return tr.reading(ctx, pool+"/", server, vs, spec, need, clk.Now())
	}

	if a, b := read("ns-a/a", "vc"), read("ns-b/b", "vc"); a.headroom != 4 || b.headroom != 4 {
		t.Fatalf("headroom a %d, b %d; want 4 each", a.headroom, b.headroom)
	}
	if n := vs.Calls(vspherefake.ReadCapacity); n != 1 {
		t.Fatalf("two pools on one placement read vCenter %d times; want once", n)
	}

	tr.created("ns-a/a", "a-va-1", "")
	tr.created("ns-a/a", "a-va-2", "")
	tr.created("ns-b/b", "b-va-1", "")
	if b := read("ns-b/b", "vc"); b.headroom != 1 || len(b.short) != 0 {
		t.Fatalf("after three VMs of both pools, b sees headroom %d (short %v); want 1", b.headroom, b.short)
	}
	tr.created("ns-a/a", "a-va-3", "")
	if a := read("ns-a/a", "vc"); a.headroom != 0 || len(a.short) != 0 {
		t.Fatalf("after four VMs, a sees headroom %d (short %v); want 0, used since the reading (no vCenter numbers)", a.headroom, a.short)
	}

	if other := read("ns-c/c", "vc-2"); other.headroom != 4 || vs.Calls(vspherefake.ReadCapacity) != 2 {
		t.Fatalf("another vCenter: headroom %d after %d reads; want its own reading (4, 2 reads)", other.headroom, vs.Calls(vspherefake.ReadCapacity))
	}

	clk.Step(capacityCheckInterval)
	if b := read("ns-b/b", "vc"); b.headroom != 4 || vs.Calls(vspherefake.ReadCapacity) != 3 {
		t.Fatalf("after the interval: headroom %d after %d reads; want a fresh reading (4, 3 reads)", b.headroom, vs.Calls(vspherefake.ReadCapacity))
	}
	if a := read("ns-a/a", "vc"); a.headroom != 4 || vs.Calls(vspherefake.ReadCapacity) != 3 {
		t.Fatalf("the other pool after the fresh reading: headroom %d after %d reads; want 4, no read", a.headroom, vs.Calls(vspherefake.ReadCapacity))
	}

	vs.SetCapacity(vsphere.Capacity{Compute: "C0", EffectiveCPUMHz: 1 << 30, CoreMHz: 2_000, EffectiveMemoryMiB: 8 * 1024,
		Datastores: []vsphere.DatastoreSpace{{Name: "ds", CapacityBytes: 100 << 40, FreeBytes: 90 << 40}}})
	clk.Step(capacityCheckInterval)
	if a := read("ns-a/a", "vc"); a.headroom != 0 || len(a.short) != 1 {
		t.Fatalf("a full cluster: headroom %d, short %v; want 0 with vCenter's numbers", a.headroom, a.short)
	}

	vs.FailNext(vspherefake.ReadCapacity, errors.New("ServerFaultCode: session expired"))
	clk.Step(capacityCheckInterval)
	if a := read("ns-a/a", "vc"); a.err == "" {
		t.Fatalf("a failed read: %+v; want the error", a)
	}
	tr.created("ns-a/a", "a-va-4", "") // nothing to count against: no panic, nothing remembered

	tr.ForgetPool(types.NamespacedName{Namespace: "ns-a", Name: "a"})
	if tr.HoldsPool(types.NamespacedName{Namespace: "ns-a", Name: "a"}) {
		t.Fatal("a deleted pool's placement is still remembered")
	}
	clk.Step(11 * capacityCheckInterval)
	read("ns-b/b", "vc")
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if _, ok := tr.capacity[placementKey("vc-2", spec)]; ok {
		t.Fatal("a reading nobody asked for in ten intervals is kept")
	}
}
