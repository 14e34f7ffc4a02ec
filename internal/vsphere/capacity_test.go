package vsphere_test

import (
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

func TestHeadroomFor(t *testing.T) {
	const gib = int64(1) << 30
	roomy := vsphere.Capacity{Compute: "C0", EffectiveCPUMHz: 100_000, CoreMHz: 2_000, EffectiveMemoryMiB: 64 * 1024,
		Datastores: []vsphere.DatastoreSpace{{Name: "ds", CapacityBytes: 1000 * gib, FreeBytes: 1000 * gib}}}
	with := func(f func(*vsphere.Capacity)) vsphere.Capacity {
		c := roomy
		c.Datastores = append([]vsphere.DatastoreSpace(nil), roomy.Datastores...)
		f(&c)
		return c
	}
	need := vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16 * 1024}
	thick := vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16 * 1024, ThickDiskGiB: 100}
	cases := []struct {
		name      string
		c         vsphere.Capacity
		need      vsphere.VMNeed
		vms       int
		shortHave []string
	}{
		// CPU 100000/8000 = 12; memory 65536/16384 = 4; disk thin: (1000-100 GiB)/16 GiB swap = 56.
		{"memory is the limit", roomy, need, 4, nil},
		{"used memory counts", with(func(c *vsphere.Capacity) { c.UsedMemoryMiB = 60 * 1024 }), need, 0, []string{"memory on C0: 16384 MiB needed, 4096 MiB free of 65536 MiB effective"}},
		{"CPU flat out", with(func(c *vsphere.Capacity) { c.UsedCPUMHz = 95_000 }), need, 0, []string{"CPU on C0: 8000 MHz needed (4 vCPU x 2000 MHz), 5000 MHz free"}},
		// thick: 100 GiB + 16 GiB swap = 116 GiB per VM; 900 usable -> 7; memory still 4.
		{"thick disk counted in full", roomy, thick, 4, nil},
		{"datastore full within the safety margin", with(func(c *vsphere.Capacity) { c.Datastores[0].FreeBytes = 110 * gib }), thick, 0,
			[]string{"disk: 116 GiB needed plus 10% of the datastore kept free (ds 110 GiB free of 1000 GiB)"}},
		{"thin disk fits where thick does not", with(func(c *vsphere.Capacity) { c.Datastores[0].FreeBytes = 120 * gib }), need, 1, nil},
		{"reserved memory has no swap file", with(func(c *vsphere.Capacity) { c.Datastores[0].FreeBytes = 100 * gib }),
			vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16 * 1024, MemoryReservationMiB: 16 * 1024}, 4, nil},
		{"datastore cluster: members counted on their own", with(func(c *vsphere.Capacity) {
			c.EffectiveMemoryMiB = 1 << 30
			c.EffectiveCPUMHz = 1 << 30
			c.Datastores = []vsphere.DatastoreSpace{{Name: "a", CapacityBytes: 100 * gib, FreeBytes: 50 * gib}, {Name: "b", CapacityBytes: 100 * gib, FreeBytes: 10 * gib}}
		}), need, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := vsphere.HeadroomFor(tc.c, tc.need)
			if h.VMs != tc.vms {
				t.Fatalf("VMs = %d, want %d (short %v)", h.VMs, tc.vms, h.Short)
			}
			if (h.VMs == 0) != (len(h.Short) > 0) {
				t.Fatalf("Short must say why exactly when nothing fits: %v", h.Short)
			}
			joined := strings.Join(h.Short, "; ")
			for _, w := range tc.shortHave {
				if !strings.Contains(joined, w) {
					t.Errorf("short %q lacks %q", joined, w)
				}
			}
		})
	}
}

func TestReadCapacityFollowsTheSimulatorKnobs(t *testing.T) {
	env, err := vcsim.Start(vcsim.Options{Clusters: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	sessions := vsphere.NewSessions(vsphere.SessionOptions{})
	t.Cleanup(func() { sessions.Close(testContext(t)) })
	c, err := sessions.Get(testContext(t), env.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	z := vcsim.ZoneOf(2)
	spec := vsphere.CapacitySpec{Datacenter: vcsim.Datacenter, ResourcePool: z.ResourcePool, DatastoreCluster: z.Datastore}
	got, err := c.ReadCapacity(testContext(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	d := vcsim.DefaultClusterCapacity
	if got.Compute != z.Cluster || got.EffectiveMemoryMiB != d.EffectiveMemoryMB || got.EffectiveCPUMHz != int64(d.EffectiveCPUMHz) ||
		got.CoreMHz != 2294 || len(got.Datastores) != 1 || got.Datastores[0].FreeBytes != vcsim.DefaultDatastoreBytes {
		t.Fatalf("defaults: %+v", got)
	}

	if err := env.SetDatastoreSpace(z.Datastore, 1<<40, 1<<30); err != nil {
		t.Fatal(err)
	}
	small := d
	small.MemDemandMB = int32(d.EffectiveMemoryMB - 8192)
	if err := env.SetClusterCapacity(z.Cluster, small); err != nil {
		t.Fatal(err)
	}
	got, err = c.ReadCapacity(testContext(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got.Datastores[0].FreeBytes != 1<<30 || got.UsedMemoryMiB != d.EffectiveMemoryMB-8192 {
		t.Fatalf("after the knobs: %+v", got)
	}
	if h := vsphere.HeadroomFor(*got, vsphere.VMNeed{NumCPUs: 2, MemoryMiB: 4096}); h.VMs != 0 || len(h.Short) != 1 || !strings.Contains(h.Short[0], "disk") {
		t.Fatalf("full datastore: %+v", h)
	}
	// The pool's datastore cluster of the default inventory reads its member.
	got, err = c.ReadCapacity(testContext(t), vsphere.CapacitySpec{Datacenter: vcsim.Datacenter, ResourcePool: vcsim.ResourcePool, DatastoreCluster: vcsim.DatastoreCluster})
	if err != nil || len(got.Datastores) != 1 || got.Datastores[0].Name != vcsim.PodDatastore {
		t.Fatalf("datastore cluster: %+v, %v", got, err)
	}
}

// Less keeps a reading right for the VMs created after it: each VM of the same need lowers the
// headroom by exactly one, whichever resource limits it, and leaves the reading it came from untouched.
func TestCapacityLessTakesOneVMEach(t *testing.T) {
	const gib = int64(1) << 30
	need := vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16 * 1024, ThickDiskGiB: 100}
	cases := []struct {
		name string
		c    vsphere.Capacity
	}{
		{"memory limits", vsphere.Capacity{Compute: "C0", EffectiveCPUMHz: 1 << 30, CoreMHz: 2_000, EffectiveMemoryMiB: 64 * 1024,
			Datastores: []vsphere.DatastoreSpace{{Name: "ds", CapacityBytes: 10_000 * gib, FreeBytes: 10_000 * gib}}}},
		{"CPU limits", vsphere.Capacity{Compute: "C0", EffectiveCPUMHz: 40_000, CoreMHz: 2_000, EffectiveMemoryMiB: 1 << 30,
			Datastores: []vsphere.DatastoreSpace{{Name: "ds", CapacityBytes: 10_000 * gib, FreeBytes: 10_000 * gib}}}},
		{"datastore cluster limits", vsphere.Capacity{Compute: "C0", EffectiveCPUMHz: 1 << 30, CoreMHz: 2_000, EffectiveMemoryMiB: 1 << 30,
			Datastores: []vsphere.DatastoreSpace{{Name: "a", CapacityBytes: 1000 * gib, FreeBytes: 500 * gib}, {Name: "b", CapacityBytes: 1000 * gib, FreeBytes: 380 * gib}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := vsphere.HeadroomFor(tc.c, need).VMs
			if start < 2 {
				t.Fatalf("case starts with %d VMs of room; needs at least 2", start)
			}
			c := tc.c
			for i := 1; i <= start; i++ {
				c = c.Less(need)
				if got := vsphere.HeadroomFor(c, need); got.VMs != start-i || (got.VMs == 0) != (len(got.Short) > 0) {
					t.Fatalf("after %d VMs: headroom %d (short %v), want %d", i, got.VMs, got.Short, start-i)
				}
			}
			if got := vsphere.HeadroomFor(tc.c, need).VMs; got != start {
				t.Fatalf("the original reading changed: %d, want %d", got, start)
			}
		})
	}
}
