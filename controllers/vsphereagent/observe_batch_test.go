package vsphereagent

import (
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// TestPoolLookUpsShareOneCall: the periodic look-ups of a pool's VMs cost one vSphere call per
// VMCheckInterval, not one per VM: the first VM due reads the others along (LookupVMs), and their own
// passes report from that read. A VM the shared read leaves out (gone) is looked up alone and reported.
func TestPoolLookUpsShareOneCall(t *testing.T) {
	h, row := startCheckRow(t, checkEvery)
	vas := []*afv1.VsphereAgent{row.va, addPoolVA(t, h, row, "b"), addPoolVA(t, h, row, "c")}
	pass := func(va *afv1.VsphereAgent) { t.Helper(); passOf(t, h, row, va) }
	for _, va := range vas {
		h.waitForCache(t, va)
		pass(va) // creates its VM
	}
	if n := row.fake.Calls(vspherefake.CreateVM); n != 3 {
		t.Fatalf("%d VMs created, want 3", n)
	}
	round := func(want map[vspherefake.Method]int) {
		t.Helper()
		before := row.fake.AllCalls()
		for _, va := range vas {
			pass(va)
		}
		after := row.fake.AllCalls()
		for _, m := range []vspherefake.Method{vspherefake.LookupVMs, vspherefake.FindVM} {
			if got := after[m] - before[m]; got != want[m] {
				t.Errorf("%s calls in a round of look-ups: %d, want %d", m, got, want[m])
			}
		}
	}
	row.clock.Step(checkEvery)
	round(map[vspherefake.Method]int{vspherefake.LookupVMs: 1})
	row.clock.Step(checkEvery)
	round(map[vspherefake.Method]int{vspherefake.LookupVMs: 1})

	gone := vas[2]
	h.waitForCache(t, gone)
	if err := h.reader.Get(h.ctx, types.NamespacedName{Namespace: gone.Namespace, Name: gone.Name}, gone); err != nil {
		t.Fatal(err)
	}
	vm, ok := row.fake.VM(gone.Status.VM.InstanceUUID)
	if !ok {
		t.Fatal("no VM for hc-worker-c")
	}
	if err := row.fake.DestroyVM(h.ctx, vm.Datacenter, vm.InstanceUUID, vm.Ownership); err != nil {
		t.Fatal(err)
	}
	row.clock.Step(checkEvery)
	round(map[vspherefake.Method]int{vspherefake.LookupVMs: 1, vspherefake.FindVM: 1})
	if err := h.reader.Get(h.ctx, types.NamespacedName{Namespace: gone.Namespace, Name: gone.Name}, gone); err != nil {
		t.Fatal(err)
	}
	if c := conditions.FindCondition(gone.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMNotFoundUnconfirmed {
		t.Fatalf("after one NotFound the gone VM's VMHealthy is %+v, want reason %s", c, afv1.ReasonVMNotFoundUnconfirmed)
	}
	// The confirming look-up, by instance UUID and BIOS UUID, vmGoneConfirmDelay later.
	row.clock.Step(vmGoneConfirmDelay)
	before := row.fake.AllCalls()
	pass(gone)
	if got := row.fake.AllCalls()[vspherefake.FindVM] - before[vspherefake.FindVM]; got != 1 {
		t.Errorf("%d FindVM calls confirming the NotFound, want 1", got)
	}
	if err := h.reader.Get(h.ctx, types.NamespacedName{Namespace: gone.Namespace, Name: gone.Name}, gone); err != nil {
		t.Fatal(err)
	}
	if c := conditions.FindCondition(gone.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMNotFound {
		t.Errorf("the gone VM's VMHealthy is %+v, want reason %s", c, afv1.ReasonVMNotFound)
	}
	for _, va := range vas[:2] {
		got := &afv1.VsphereAgent{}
		if err := h.reader.Get(h.ctx, types.NamespacedName{Namespace: va.Namespace, Name: va.Name}, got); err != nil {
			t.Fatal(err)
		}
		if c := conditions.FindCondition(got.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMRunning {
			t.Errorf("VM of %s: VMHealthy %+v, want reason %s", va.Name, c, afv1.ReasonVMRunning)
		}
	}
}

// checkEvery is the VM check interval of these tests (the operator's default).
const checkEvery = 2 * time.Minute

// startCheckRow starts the lifecycle harness with one row whose VMs are checked every interval.
func startCheckRow(t *testing.T, interval time.Duration) (*lcHarness, *lcRow) {
	t.Helper()
	h := startLifecycleHarness(t)
	row := &lcRow{}
	h.newRow(t, row)
	row.r.Opts.VMCheckInterval = interval
	return h, row
}

// addPoolVA creates another VsphereAgent of row's pool (its pass creates its VM).
func addPoolVA(t *testing.T, h *lcHarness, row *lcRow, name string) *afv1.VsphereAgent {
	t.Helper()
	va := &afv1.VsphereAgent{ObjectMeta: metav1.ObjectMeta{Namespace: row.ns, Name: "hc-worker-" + name, Labels: map[string]string{afv1.LabelPool: row.pool.Name}}}
	va.Spec.PoolRef.Name = row.pool.Name
	if err := controllerutil.SetControllerReference(row.pool, va, h.admin.Scheme()); err != nil {
		t.Fatal(err)
	}
	if err := h.admin.Create(h.ctx, va); err != nil {
		t.Fatal(err)
	}
	return va
}

// passOf runs one pass of va's reconciler and waits until the cache holds what it wrote.
func passOf(t *testing.T, h *lcHarness, row *lcRow, va *afv1.VsphereAgent) {
	t.Helper()
	if _, err := row.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: va.Namespace, Name: va.Name}}); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, va)
}

// TestPoolLookUpsAlignWhateverTheCreationTimes: VMs of a pool created more than half an interval apart
// (as a pool scaling up over minutes creates them) still cost one look-up call per interval once the
// first shared read has aligned them: the first read takes every VM of the pool along, not only the ones
// due soon; each VM reports from it when its own check falls due. Passes that fall due together, run
// concurrently, share the call in flight.
func TestPoolLookUpsAlignWhateverTheCreationTimes(t *testing.T) {
	h, row := startCheckRow(t, checkEvery)
	vas := []*afv1.VsphereAgent{row.va}
	h.waitForCache(t, row.va)
	passOf(t, h, row, row.va) // VM a at 0 s
	for _, name := range []string{"b", "c"} {
		row.clock.Step(50 * time.Second) // b at 50 s, c at 100 s
		va := addPoolVA(t, h, row, name)
		h.waitForCache(t, va)
		passOf(t, h, row, va)
		vas = append(vas, va)
	}
	if n := row.fake.Calls(vspherefake.CreateVM); n != 3 {
		t.Fatalf("%d VMs created, want 3", n)
	}
	// Each look-up takes 300 ms of real time, so passes that run concurrently overlap in their look-ups, as
	// they do against a loaded vCenter (the clock paces the checks).
	row.fake.SetLookupRoundTrip(300 * time.Millisecond)
	// From 120 s (a's first check) to 360 s, every VM's pass runs each 10 s, concurrently: a, b and c
	// fall due at 120, 170 and 220 s; aligned by the read at 120 s, all three at 240 and 360 s.
	before := row.fake.AllCalls()
	for at := 110 * time.Second; at <= 360*time.Second; at += 10 * time.Second {
		row.clock.Step(10 * time.Second)
		var passes errgroup.Group
		for _, va := range vas {
			passes.Go(func() error {
				_, err := row.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: va.Namespace, Name: va.Name}})
				return err
			})
		}
		if err := passes.Wait(); err != nil {
			t.Fatal(err)
		}
		for _, va := range vas {
			h.waitForCache(t, va)
		}
	}
	after := row.fake.AllCalls()
	if got := after[vspherefake.LookupVMs] - before[vspherefake.LookupVMs]; got != 3 {
		t.Errorf("%d LookupVMs calls from 120 s to 360 s, want 3 (one per interval: at 120, 240 and 360 s)", got)
	}
	if got := after[vspherefake.FindVM] - before[vspherefake.FindVM]; got != 0 {
		t.Errorf("%d FindVM calls, want 0 (every VM is read along)", got)
	}
	for _, va := range vas {
		got := &afv1.VsphereAgent{}
		if err := h.reader.Get(h.ctx, types.NamespacedName{Namespace: va.Namespace, Name: va.Name}, got); err != nil {
			t.Fatal(err)
		}
		if c := conditions.FindCondition(got.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMRunning {
			t.Errorf("VM of %s: VMHealthy %+v, want reason %s", va.Name, c, afv1.ReasonVMRunning)
		}
	}
}
