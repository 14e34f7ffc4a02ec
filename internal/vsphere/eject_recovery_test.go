package vsphere_test

import (
	"testing"

	"github.com/vmware/govmomi/object"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// startAndCheckpoint starts the ejection and polls until the lock question is pending; returns the
// request a controller would send after checkpointing the question.
func (f *ejectFixture) startAndCheckpoint(t *testing.T) vsphere.EjectRequest {
	t.Helper()
	started := f.eject(t, f.req)
	req := f.req
	req.TaskRef = started.TaskRef
	pending := f.pollUntil(t, req, vsphere.EjectQuestionPending)
	req.QuestionID, req.ConfirmQuestionID = pending.QuestionID, pending.QuestionID
	return req
}

func TestEjectAnswersTheYesChoiceInEveryShape(t *testing.T) {
	for _, tc := range []struct {
		name    string
		choices []vcsim.LockChoice
	}{
		{"real vCenter shape", vcsim.RealLockChoices},
		{"reversed order", []vcsim.LockChoice{{Key: "0", Label: "button.no", Summary: "No"}, {Key: "1", Label: "button.yes", Summary: "Yes", Yes: true}}},
		{"localized summaries", []vcsim.LockChoice{{Key: "0", Label: "button.no", Summary: "Nein"}, {Key: "1", Label: "button.yes", Summary: "Ja", Yes: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newEjectFixture(t)
			f.vm.SetLockQuestionChoices(tc.choices)
			req := f.startAndCheckpoint(t)
			f.pollUntil(t, req, vsphere.EjectDone)
			answers := f.vm.Answers()
			if len(answers) != 1 || !answers[0].Yes {
				t.Fatalf("answers = %+v, want exactly one Yes", answers)
			}
			if cd := f.cdrom(t); cd.ISOPath != "" || cd.Connected {
				t.Fatalf("device after ejection: %+v", cd)
			}
		})
	}
}

func TestEjectRefusesAQuestionWithoutYes(t *testing.T) {
	f := newEjectFixture(t)
	f.vm.SetLockQuestionChoices([]vcsim.LockChoice{{Key: "0", Label: "button.ok", Summary: "OK"}, {Key: "1", Label: "button.cancel", Summary: "Cancel"}})
	req := f.startAndCheckpoint(t)
	_, err := f.h.client.EjectISO(testContext(t), req)
	wantClass(t, err, vsphere.ClassRefused)
	if !vsphere.IsAnswerError(err) {
		t.Fatalf("error %v is not an answer error", err)
	}
	if len(f.vm.Answers()) != 0 {
		t.Fatalf("answered: %+v", f.vm.Answers())
	}
	if cd := f.cdrom(t); cd.ISOPath != isoPath {
		t.Fatalf("device changed: %+v", cd)
	}
}

// A crash after the reconfigure started but before its task was checkpointed: the retry without a
// TaskRef takes the running task over and never starts a second reconfigure.
func TestEjectAdoptsAReconfigureStartedBeforeACrash(t *testing.T) {
	f := newEjectFixture(t)
	started := f.eject(t, f.req) // its TaskRef is "lost"
	if f.vm.Reconfigures() != 1 {
		t.Fatalf("%d reconfigures after the start", f.vm.Reconfigures())
	}
	again := f.eject(t, f.req) // recovery: no TaskRef, no question recorded
	if again.TaskRef != started.TaskRef || !again.Adopted {
		t.Fatalf("recovery = %+v, want the running task %s adopted", again, started.TaskRef)
	}
	if again.State != vsphere.EjectQuestionPending || again.QuestionID == "" {
		t.Fatalf("recovery = %+v, want the pending lock question reported", again)
	}
	req := f.req
	req.TaskRef, req.QuestionID, req.ConfirmQuestionID = again.TaskRef, again.QuestionID, again.QuestionID
	f.pollUntil(t, req, vsphere.EjectDone)
	if n := f.vm.Reconfigures(); n != 1 {
		t.Fatalf("%d reconfigures, want exactly 1", n)
	}
	if a := f.vm.Answers(); len(a) != 1 {
		t.Fatalf("answers = %+v, want 1", a)
	}
}

// A crash after the answer, before it was recorded: the question is gone, nothing is answered twice.
func TestEjectAfterAnswerNeverAnswersAgain(t *testing.T) {
	f := newEjectFixture(t)
	req := f.startAndCheckpoint(t)
	res := f.eject(t, req)
	if !res.Answered {
		t.Fatalf("first confirmed step = %+v, want Answered", res)
	}
	f.pollUntil(t, req, vsphere.EjectDone) // the same request again, as after a crash
	if a := f.vm.Answers(); len(a) != 1 {
		t.Fatalf("answers = %+v, want exactly 1", a)
	}
}

// A reconfigure task that ended in error is reported as such, so the caller starts afresh.
func TestEjectReportsAFailedTask(t *testing.T) {
	f := newEjectFixture(t)
	req := f.startAndCheckpoint(t)
	// Someone answers "No" (key of button.no): the task fails.
	if err := object.NewVirtualMachine(adminClient(t, f.h), f.vmRef()).Answer(testContext(t), req.QuestionID, "1"); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 200 {
		if _, err = f.h.client.EjectISO(testContext(t), req); err != nil {
			break
		}
	}
	if !vsphere.IsEjectTaskFailed(err) || vsphere.IsAnswerError(err) {
		t.Fatalf("err = %v, want a failed eject task", err)
	}
	fresh := f.req // a new attempt starts a new reconfigure
	f.vm.SetDoorLocked(false)
	started := f.eject(t, fresh)
	fresh.TaskRef = started.TaskRef
	f.pollUntil(t, fresh, vsphere.EjectDone)
	if n := f.vm.Reconfigures(); n != 2 {
		t.Fatalf("%d reconfigures, want 2 (the failed one and the new one)", n)
	}
}
