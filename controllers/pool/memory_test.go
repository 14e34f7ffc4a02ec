package pool

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory/memorytest"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// poolRecordFields are the Reconciler's fields that remember something per pool, with the name each
// registers under (initMemory).
var poolRecordFields = map[string]string{
	"expectations": "pool/expectations", "debounce": "pool/debounce", "orphanScans": "pool/orphanScans",
	"copies": "pool/copies", "latency": "pool/latency", "statusWrites": "pool/statusWrites", "own": "pool/own",
	"refusalEvents": "pool/refusalEvents", "domains": "pool/domains", "checks": "pool/preflight",
	"staticIP": "pool/staticIP", "Opts.DestroyedHosts": "destroyedHosts", "modules": "pool/modules",
}

// filledElsewhere are registered records this package cannot fill (their state is another package's):
// their ForgetPool and HoldsPool are tested there.
var filledElsewhere = map[string]string{
	"pool/preflight": "controllers/preflight TestCheckerForgetsADeletedPool",
	"pool/staticIP":  "controllers/staticip TestFirstPassOncePerPool",
}

// notPoolRecords are the fields holding maps that are no per-pool record, and why.
var notPoolRecords = map[string]string{
	"Memory":           "the registry itself",
	"Recorder":         "batch Events waiting to be written: flushed within EventBatchMax, a deleted pool's too",
	"Opts.Credentials": "keyed by Secret, which pools share: dropped when vCenter refuses it or a read fails",
	"Opts.NoVMYet":     "keyed by VsphereAgent UID: forgotten with the VsphereAgent, which a pool's deletion waits for",
	"Opts.Liveness":    "the passes running now: each ends",
	"markedVMs":        "keyed by vCenter, user and datacenter, which pools share: an entry past its max age goes with the next listing",
}

// isoMemory stands in for the ISO cache (its Manager's Forget and Holds are tested in internal/iso).
type isoMemory struct {
	pools sets.Set[types.NamespacedName]
}

func (m *isoMemory) Reconcile(context.Context, ISORequest) ISOUpdate { return ISOUpdate{} }
func (m *isoMemory) ForgetPool(pool types.NamespacedName)            { m.pools.Delete(pool) }
func (m *isoMemory) HoldsPool(pool types.NamespacedName) bool        { return m.pools.Has(pool) }
func (m *isoMemory) remember(pool types.NamespacedName)              { m.pools.Insert(pool) }

var _ poolmemory.Record = &isoMemory{}

// TestEveryPoolRecordIsForgotten: every field of the pool controller that remembers something per pool
// is registered with the poolmemory Registry, and its one Forget leaves nothing of a deleted pool in any
// of them while another pool's memory stays. A new field holding a map fails the first half until it is
// registered (or listed in notPoolRecords with a reason); a registered record this test does not fill, or
// whose ForgetPool misses an entry, fails the second.
func TestEveryPoolRecordIsForgotten(t *testing.T) {
	registered := map[string]bool{}
	for _, name := range poolRecordFields {
		registered[name] = true
	}
	for _, f := range memorytest.Holders(&Reconciler{}, "Opts") {
		if _, ok := poolRecordFields[f]; !ok && notPoolRecords[f] == "" {
			t.Errorf("Reconciler.%s holds a map but is neither a registered per-pool record (poolRecordFields, initMemory) nor listed in notPoolRecords", f)
		}
	}

	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	iso := &isoMemory{pools: sets.New[types.NamespacedName]()}
	r := &Reconciler{Opts: config.Options{Services: config.Services{Clock: clk, BatchClock: clk, DestroyedHosts: &poolmemory.DestroyedHosts{}}}, ISO: iso}
	r.Opts.Defaults()
	r.initMemory()
	registered["pool/iso"] = true
	if got, want := r.Memory.Names(), sets.List(sets.KeySet(registered)); !slices.Equal(got, want) {
		t.Fatalf("registered records %v, want %v", got, want)
	}

	fill := func(p *afv1.VsphereAgentPool) {
		key, nn, now := poolKeyOf(p), types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, clk.Now()
		r.expectations.expectCreate(key, p.Name+"-va-1")
		r.debounce.remember(key, &planner.Burst{Value: 2, First: now, LastChange: now})
		r.orphanScans.due(nn, p.UID, now, time.Minute)
		r.copies.observe(nn, p.UID, []vsphere.VMInfo{{InstanceUUID: "copy-of-" + p.Name}})
		r.latency.observe(nn, []agents.AgentMachine{{UID: "am-" + types.UID(p.Name)}}, sets.New("am-"+types.UID(p.Name)), now)
		r.statusWrites.remember(key, &planner.Burst{Value: 1, First: now, LastChange: now})
		r.own.Wrote("1", p)
		r.refusalEvents.Allow(key+"/credentials", afv1.ReasonCredentialsNotFound, now)
		r.domains.reading(context.Background(), key+"/zone-a", "vc.example", vspherefake.New(clk), vsphere.CapacitySpec{Datacenter: "dc"}, vsphere.VMNeed{NumCPUs: 2}, now)
		r.domains.created(key, p.Name+"-va-1", "zone-a")
		r.domains.meter(p, key, sets.New("zone-a"))
		r.domains.mu.Lock()
		if r.domains.failing == nil {
			r.domains.failing = map[string]*domainFailures{}
		}
		r.domains.failing[key+"/zone-a"] = &domainFailures{failures: 1, lastAt: now}
		r.domains.mu.Unlock()
		iso.remember(nn)
		r.Opts.DestroyedHosts.Add(nn, poolmemory.DestroyedHost{VM: p.Name + "-vm", MAC: "00:50:56:00:00:01", At: now})
		r.modules.created(nn, p.UID, "domain-c1", "module-"+p.Name)
	}
	a := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a", ResourceVersion: "2"}}
	b := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b", ResourceVersion: "2"}}
	fill(a)
	fill(b)
	var all []string
	for _, n := range r.Memory.Names() {
		if filledElsewhere[n] == "" {
			all = append(all, n)
		}
	}
	keyA, keyB := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	if got := r.Memory.Holding(keyA); !slices.Equal(got, all) {
		t.Fatalf("after filling, records holding pool a: %v; want every registered record %v (fill the missing ones here)", got, all)
	}
	r.Memory.Forget(keyA)
	if got := r.Memory.Holding(keyA); len(got) > 0 {
		t.Errorf("records still holding the deleted pool a: %v", got)
	}
	if got := r.Memory.Holding(keyB); !slices.Equal(got, all) {
		t.Errorf("records holding pool b after forgetting a: %v; want %v", got, all)
	}
}

// poolKeyOf is the pool's "<namespace>/<name>" key, as the pool's records use it.
func poolKeyOf(p *afv1.VsphereAgentPool) string { return p.Namespace + "/" + p.Name }
