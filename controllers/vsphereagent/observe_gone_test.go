package vsphereagent

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	kevents "k8s.io/client-go/tools/events"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// TestGoneStep: a single look-up that finds no VM never declares it gone: the first NotFound makes it
// suspect, the confirming look-up runs only vmGoneConfirmDelay later, and a VM already declared gone
// stays so without a new confirmation.
func TestGoneStep(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		declared  bool
		since     time.Time
		suspected bool
		want      goneStepKind
		wait      time.Duration
	}{
		{"first NotFound: suspect, look again after the delay", false, time.Time{}, false, goneSuspect, vmGoneConfirmDelay},
		{"suspect since a moment: wait for the rest of the delay", false, now.Add(-10 * time.Second), true, goneWait, vmGoneConfirmDelay - 10*time.Second},
		{"suspect since just under the delay", false, now.Add(-vmGoneConfirmDelay + time.Millisecond), true, goneWait, time.Millisecond},
		{"suspect since exactly the delay: confirm", false, now.Add(-vmGoneConfirmDelay), true, goneConfirm, 0},
		{"suspect since long ago (a pass delayed): confirm", false, now.Add(-time.Hour), true, goneConfirm, 0},
		{"declared gone before: stays gone, no second confirmation", true, time.Time{}, false, goneDeclared, 0},
		{"declared gone and suspected: declared wins", true, now, true, goneDeclared, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := goneStep(tt.declared, tt.since, tt.suspected, now)
			if got != tt.want || wait != tt.wait {
				t.Fatalf("goneStep = %d, %s; want %d, %s", got, wait, tt.want, tt.wait)
			}
		})
	}
}

// TestVMNotFoundSuspectsOnlyOncePersisted: the first NotFound makes the VM suspect only after the pass's
// status (VMNotFoundUnconfirmed) is written. Suspected before the write, a pass whose write conflicted
// would wait out the confirmation delay without ever reporting the suspicion (CI at 457ac8b: the
// condition never said VMNotFoundUnconfirmed while the clock stood still).
func TestVMNotFoundSuspectsOnlyOncePersisted(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	rec := kevents.NewFakeRecorder(4)
	r := &Reconciler{Recorder: events.NewRecorder(rec)}
	va := &afv1.VsphereAgent{}
	va.UID = "va-1"
	va.Status.VM.InstanceUUID = "4203-aaaa"
	s := &vmScope{va: va}

	if !r.vmNotFound(s, now) {
		t.Fatal("vmNotFound ended the pass on a first NotFound")
	}
	if c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMNotFoundUnconfirmed {
		t.Fatalf("VMHealthy = %+v, want reason %s", c, afv1.ReasonVMNotFoundUnconfirmed)
	}
	if _, suspected := r.checks.missingSince(va.UID); suspected {
		t.Fatal("suspected before the status was written: a conflicting write would leave the suspicion unreported")
	}
	if len(rec.Events) != 0 {
		t.Fatal("an Event before the status was written")
	}
	for _, f := range s.afterWrite {
		f()
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d Events after the write, want the one VMNotFoundUnconfirmed", len(rec.Events))
	}
	if since, suspected := r.checks.missingSince(va.UID); !suspected || !since.Equal(now) {
		t.Fatalf("after the write: missingSince = %s, %t; want %s, true", since, suspected, now)
	}
}

// TestPowerOnReportSurvivesAConflictedWrite: a discovery VM this process powered on again is reported
// VMPoweredOn (condition and Event) even when the pass that did it could not write its status (a
// conflict); the next look-up finds the VM running and must not report only that (CI at 1e03ddd: the
// condition said VMRunning and no Event told anyone the VM had been powered off and on).
func TestPowerOnReportSurvivesAConflictedWrite(t *testing.T) {
	rec := kevents.NewFakeRecorder(4)
	r := &Reconciler{Recorder: events.NewRecorder(rec)}
	running := &vsphere.VMInfo{Name: "hc-worker-1", Folder: "agent-forge/t/workers", PoweredOn: true}
	newScope := func() *vmScope {
		va := &afv1.VsphereAgent{}
		va.UID = "va-1"
		r.reportVM(&vmScope{va: va}, true, afv1.ReasonVMRunning, "", "running") // what the stored object says
		return &vmScope{va: va}
	}

	first := newScope()
	r.reportPoweredOn(first, "VM hc-worker-1 was powered off outside the operator; it had not joined a cluster, so it was powered on again")
	// first's status write conflicted: its afterWrite never runs.

	second := newScope()
	r.reportRunning(second, running)
	if c := meta.FindStatusCondition(second.va.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMPoweredOn {
		t.Fatalf("after a conflicted write, the next pass reports VMHealthy %+v; want reason %s", c, afv1.ReasonVMPoweredOn)
	}
	for _, f := range second.afterWrite {
		f()
	}
	if len(rec.Events) != 1 {
		t.Fatalf("%d Events once the report was written, want the one VMPoweredOn", len(rec.Events))
	}

	third := newScope()
	r.reportRunning(third, running)
	if c := meta.FindStatusCondition(third.va.Status.Conditions, afv1.ConditionVMHealthy); c == nil || c.Reason != afv1.ReasonVMRunning {
		t.Fatalf("once VMPoweredOn was written, a later look-up reports %+v; want %s", c, afv1.ReasonVMRunning)
	}
}
