package vsphereagent

import (
	"testing"
	"time"

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
	h := startLifecycleHarness(t)
	row := &lcRow{}
	h.newRow(t, row)
	const every = 2 * time.Minute
	row.r.Opts.VMCheckInterval = every
	vas := []*afv1.VsphereAgent{row.va}
	for _, name := range []string{"b", "c"} {
		va := &afv1.VsphereAgent{ObjectMeta: metav1.ObjectMeta{Namespace: row.ns, Name: "hc-worker-" + name, Labels: map[string]string{afv1.LabelPool: row.pool.Name}}}
		va.Spec.PoolRef.Name = row.pool.Name
		if err := controllerutil.SetControllerReference(row.pool, va, h.admin.Scheme()); err != nil {
			t.Fatal(err)
		}
		if err := h.admin.Create(h.ctx, va); err != nil {
			t.Fatal(err)
		}
		vas = append(vas, va)
	}
	pass := func(va *afv1.VsphereAgent) {
		t.Helper()
		if _, err := row.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: va.Namespace, Name: va.Name}}); err != nil {
			t.Fatal(err)
		}
		h.waitForCache(t, va)
	}
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
	row.clock.Step(every)
	round(map[vspherefake.Method]int{vspherefake.LookupVMs: 1})
	row.clock.Step(every)
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
	row.clock.Step(every)
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
