package vsphereagent

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// TestEjectionArmedAtBoundWithoutALookUp: in a pool that ejects, the pass that makes the VM Bound writes
// the ejection record from the CD-ROM its creation read (no look-up of its own), and the pass that sees
// Installed=True ejects from that record and writes only the result. Over the whole life: no FindVM.
// armedVM runs a VM of a pool that ejects to Bound (Agent registered and reserved, not installed) and
// returns the harness, the row, a pass function and the status after the Bound pass.
func armedVM(t *testing.T) (*lcHarness, *lcRow, func() *afv1.VsphereAgent, *afv1.VsphereAgent) {
	t.Helper()
	h := startLifecycleHarness(t)
	row := &lcRow{}
	h.newRow(t, row)
	pool := &afv1.VsphereAgentPool{}
	if err := h.admin.Get(h.ctx, types.NamespacedName{Namespace: row.ns, Name: row.pool.Name}, pool); err != nil {
		t.Fatal(err)
	}
	pool.Spec.ISO.EjectAfterInstall = true
	if err := h.admin.Update(h.ctx, pool); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, pool)
	row.r.Guard = &ejection.Guard{Reader: h.reader, Clock: row.clock, Interval: time.Hour, Log: logr.Discard()}
	key := types.NamespacedName{Namespace: row.ns, Name: row.va.Name}
	pass := func() *afv1.VsphereAgent {
		t.Helper()
		row.clock.Step(time.Second)
		if _, err := row.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		h.waitForCache(t, row.va)
		got := &afv1.VsphereAgent{}
		if err := h.reader.Get(h.ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	pass()
	registerAgent(t, h, row)
	pass()
	bindAgent(t, h, row)
	bound := pass()
	return h, row, pass, bound
}

func TestEjectionArmedAtBoundWithoutALookUp(t *testing.T) {
	h, row, pass, bound := armedVM(t)
	rec := bound.Status.ISOEjection
	switch {
	case bound.Status.VM.Phase != afv1.VMPhaseBound:
		t.Fatalf("phase %s, want Bound", bound.Status.VM.Phase)
	case rec == nil || !rec.Armed:
		t.Fatalf("the Bound status carries no armed record: %+v", rec)
	case rec.DeviceKey != 3000 || rec.ISOPath != bound.Status.VM.ISOPath || rec.InstanceUUID != bound.Status.VM.InstanceUUID || rec.OwnerUID != string(bound.UID):
		t.Errorf("record %+v does not name the creation's CD-ROM 3000 with %s of VM %s", rec, bound.Status.VM.ISOPath, bound.Status.VM.InstanceUUID)
	}
	if c := conditions.FindCondition(bound.Status.Conditions, afv1.ConditionISOEjected); c == nil || c.Reason != afv1.ReasonWaitingForInstallation {
		t.Errorf("ISOEjected %+v, want WaitingForInstallation", c)
	}
	if n := row.fake.Calls(vspherefake.EjectISO); n != 0 {
		t.Fatalf("%d EjectISO calls before Installed=True", n)
	}

	installAgent(t, h, row)
	done := pass()
	if done.Status.ISOEjection != nil {
		t.Errorf("record %+v left after the ejection", done.Status.ISOEjection)
	}
	if c := conditions.FindCondition(done.Status.Conditions, afv1.ConditionISOEjected); c == nil || c.Reason != afv1.ReasonEjected {
		t.Errorf("ISOEjected %+v, want Ejected", c)
	}
	if done.ResourceVersion == bound.ResourceVersion {
		t.Error("the result was not written")
	}
	calls := row.fake.AllCalls()
	if calls[vspherefake.EjectISO] != 1 || calls[vspherefake.FindVM] != 0 || calls[vspherefake.LookupVMs] != 0 {
		t.Errorf("vSphere calls %v; want one EjectISO and no look-up", calls)
	}
}

// installAgent plays assisted-service reporting the host installed (Installed=True).
func installAgent(t *testing.T, h *lcHarness, row *lcRow) {
	t.Helper()
	a := agents.New(agents.AgentGVK)
	if err := h.admin.Get(h.ctx, types.NamespacedName{Namespace: row.ns, Name: "agent-" + row.ns}, a); err != nil {
		t.Fatal(err)
	}
	unstructuredcond.Set(a, row.clock.Now(), unstructuredcond.Condition{Type: "Installed", Status: unstructuredcond.True,
		Reason: "InstallationCompleted", Message: "The installation has completed: Done"})
	if err := h.admin.Status().Update(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, a)
}

// TestArmedRecordOfAGoneVMIsDropped: a VM deleted in vCenter while its ejection is armed: the look-up
// and its confirmation report it gone and the armed record is dropped (nothing to resume), no ejection is tried.
func TestArmedRecordOfAGoneVMIsDropped(t *testing.T) {
	_, row, pass, bound := armedVM(t)
	if bound.Status.ISOEjection == nil {
		t.Fatal("no armed record")
	}
	vm, ok := row.fake.VM(bound.Status.VM.InstanceUUID)
	if !ok {
		t.Fatal("no VM")
	}
	if err := row.fake.DestroyVM(t.Context(), vm.Datacenter, vm.InstanceUUID, vm.Ownership); err != nil {
		t.Fatal(err)
	}
	row.clock.Step(row.r.Opts.VMCheckInterval)
	got := pass()
	if c := conditions.FindCondition(got.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMNotFoundUnconfirmed {
		t.Fatalf("VMHealthy %+v after one NotFound, want %s", c, afv1.ReasonVMNotFoundUnconfirmed)
	}
	row.clock.Step(vmGoneConfirmDelay)
	got = pass()
	if c := conditions.FindCondition(got.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMNotFound {
		t.Fatalf("VMHealthy %+v, want VMNotFound", c)
	}
	if got.Status.ISOEjection != nil {
		t.Errorf("armed record %+v kept for a VM that is gone", got.Status.ISOEjection)
	}
	if c := conditions.FindCondition(got.Status.Conditions, afv1.ConditionISOEjected); c == nil || c.Reason != afv1.ReasonDisabled {
		t.Errorf("ISOEjected %+v, want EjectionDisabled (dropped)", c)
	}
	if n := row.fake.Calls(vspherefake.EjectISO); n != 0 {
		t.Errorf("%d EjectISO calls for a gone VM", n)
	}
}

// TestRecordWithoutArmedMarkWaitsForInstallation: a record that never started whose armed mark was lost
// (an outdated CRD pruned it) does not start while the Agent is not installed; the mark is restored.
func TestRecordWithoutArmedMarkWaitsForInstallation(t *testing.T) {
	h, row, pass, bound := armedVM(t)
	if bound.Status.ISOEjection == nil {
		t.Fatal("no armed record")
	}
	bound.Status.ISOEjection.Armed = false
	if err := h.admin.Status().Update(h.ctx, bound); err != nil {
		t.Fatal(err)
	}
	h.waitForCache(t, bound)
	got := pass()
	if got.Status.ISOEjection == nil || !got.Status.ISOEjection.Armed {
		t.Errorf("record %+v: want it kept and armed again", got.Status.ISOEjection)
	}
	if n := row.fake.Calls(vspherefake.EjectISO); n != 0 {
		t.Errorf("%d EjectISO calls before Installed=True", n)
	}
}
