package vsphereagent

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/internal/poolmemory/memorytest"
)

// vmRecordFields are the Reconciler's fields that remember something per pool, with the name each
// registers under (registerMemory).
var vmRecordFields = map[string]string{"admits": "vsphereagent/admits"}

// notVMPoolRecords are the fields holding maps that are no per-pool record of this controller, and why.
var notVMPoolRecords = map[string]string{
	"Memory":              "the registry itself",
	"Recorder":            "batch Events waiting to be written: flushed within EventBatchMax, a deleted pool's too",
	"refusals":            "keyed by VsphereAgent UID, expiring (refusalMemoryTTL)",
	"own":                 "keyed by VsphereAgent: forgotten when it is gone",
	"eject":               "keyed by VsphereAgent UID: dropped when its ejection is recorded",
	"staticIP":            "the VM side never marks a lease pass (firstPass is the pool controller's)",
	"checks":              "keyed by VsphereAgent UID: forgotten with the VsphereAgent",
	"joins":               "keyed by VsphereAgent UID: forgotten after a join and before its VM is destroyed",
	"holds":               "keyed by VsphereAgent: forgotten when it is gone",
	"resets":              "keyed by VsphereAgent UID: forgotten when its Agent leaves the state, and in its cleanup",
	"Opts.Credentials":    "keyed by Secret, which pools share: dropped when vCenter refuses it or a read fails",
	"Opts.NoVMYet":        "keyed by VsphereAgent UID: forgotten in its cleanup",
	"Opts.DestroyedHosts": "registered by the pool controller (one object the wiring hands both)",
	"Opts.Liveness":       "the passes running now: each ends",
}

// TestEveryPoolRecordIsRegistered: every field of the VsphereAgent controller that remembers something
// per pool is registered with the poolmemory Registry, and the Registry's Forget of a deleted pool leaves
// nothing of it there. A new field holding a map fails until it is registered or listed with a reason.
func TestEveryPoolRecordIsRegistered(t *testing.T) {
	for _, f := range memorytest.Holders(&Reconciler{}, "Opts") {
		if _, ok := vmRecordFields[f]; !ok && notVMPoolRecords[f] == "" {
			t.Errorf("Reconciler.%s holds a map but is neither a registered per-pool record (vmRecordFields, registerMemory) nor listed in notVMPoolRecords", f)
		}
	}
	r := &Reconciler{}
	r.registerMemory()
	var want []string
	for _, n := range vmRecordFields {
		want = append(want, n)
	}
	slices.Sort(want)
	if got := r.Memory.Names(); !slices.Equal(got, want) {
		t.Fatalf("registered records %v, want %v", got, want)
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	r.admits.byPool = map[string]map[types.UID]bool{a.String(): {"va-a": true}, b.String(): {"va-b": true}}
	if got := r.Memory.Holding(a); !slices.Equal(got, want) {
		t.Fatalf("after filling, records holding pool a: %v; want %v", got, want)
	}
	r.Memory.Forget(a)
	if got := r.Memory.Holding(a); len(got) > 0 {
		t.Errorf("records still holding the deleted pool a: %v", got)
	}
	if got := r.Memory.Holding(b); !slices.Equal(got, want) {
		t.Errorf("records holding pool b after forgetting a: %v; want %v", got, want)
	}
}
