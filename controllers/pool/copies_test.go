package pool

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// TestSplitCopies: the orphan scan treats only originals of this pool as candidates; copies (new instance
// UUID, or a template) are set apart; another pool's VMs are neither.
func TestSplitCopies(t *testing.T) {
	const pool, owner = "pool-a", "6f1c0d0e-0000-4000-8000-000000000001"
	mark := vsphere.Ownership{OwnerUID: owner, PoolUID: pool}
	vms := []vsphere.VMInfo{
		{Name: "original", InstanceUUID: owner, Ownership: mark},
		{Name: "clone", InstanceUUID: "11111111-0000-4000-8000-000000000002", Ownership: mark},
		{Name: "template", InstanceUUID: "11111111-0000-4000-8000-000000000003", Template: true, Ownership: mark},
		{Name: "original-marked-template", InstanceUUID: owner, Template: true, Ownership: mark},
		{Name: "other-pool", InstanceUUID: owner, Ownership: vsphere.Ownership{OwnerUID: owner, PoolUID: "pool-b"}},
		{Name: "foreign", InstanceUUID: owner},
	}
	originals, copies := splitCopies(vms, pool)
	names := func(vms []vsphere.VMInfo) (out []string) {
		for _, vm := range vms {
			out = append(out, vm.Name)
		}
		return out
	}
	if got := names(originals); len(got) != 1 || got[0] != "original" {
		t.Errorf("originals = %v", got)
	}
	if got := names(copies); len(got) != 3 || got[0] != "clone" || got[1] != "template" || got[2] != "original-marked-template" {
		t.Errorf("copies = %v", got)
	}
}

// TestCopyMemoryReportsOnce: a copy is new only at the first scan that sees it; one gone and back is new
// again; the count is the last scan's, absent before any scan.
func TestCopyMemoryReportsOnce(t *testing.T) {
	m := newCopyMemory()
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	if _, ok := m.count(p, "uid-1"); ok {
		t.Fatal("count before any scan")
	}
	a, b := vsphere.VMInfo{InstanceUUID: "a"}, vsphere.VMInfo{InstanceUUID: "b"}
	steps := []struct {
		found []vsphere.VMInfo
		fresh int
		count int32
	}{
		{[]vsphere.VMInfo{a}, 1, 1},
		{[]vsphere.VMInfo{a, b, b}, 1, 2},
		{[]vsphere.VMInfo{a, b}, 0, 2},
		{[]vsphere.VMInfo{b}, 0, 1},
		{[]vsphere.VMInfo{a, b}, 1, 2},
		{nil, 0, 0},
	}
	for i, s := range steps {
		if got := len(m.observe(p, "uid-1", s.found)); got != s.fresh {
			t.Errorf("step %d: %d new, want %d", i, got, s.fresh)
		}
		if n, ok := m.count(p, "uid-1"); !ok || n != s.count {
			t.Errorf("step %d: count %d (%t), want %d", i, n, ok, s.count)
		}
	}
	// The pool deleted and created again under its name: a new UID starts over.
	if _, ok := m.count(p, "uid-2"); ok {
		t.Fatal("count of a new pool of the same name")
	}
	if got := len(m.observe(p, "uid-2", []vsphere.VMInfo{b})); got != 1 {
		t.Errorf("a new pool of the same name: %d new, want 1", got)
	}
	m.ForgetPool(p)
	if _, ok := m.count(p, "uid-2"); ok {
		t.Fatal("count after forget")
	}
}
