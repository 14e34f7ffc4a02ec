package vsphere_test

import (
	"testing"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// ejectFixture is an owned, powered-on VM with the test ISO, wrapped so its guest locks the CD-ROM door.
type ejectFixture struct {
	h     *harness
	owner vsphere.Ownership
	info  *vsphere.VMInfo
	vm    *vcsim.VM
	req   vsphere.EjectRequest
}

func newEjectFixture(t *testing.T) *ejectFixture {
	h := newHarness(t)
	h.uploadISO(t, isoPath)
	owner := newOwner()
	info := h.createVM(t, "eject-me", owner)
	vm, err := h.env.WrapVM(info.InstanceUUID)
	if err != nil {
		t.Fatal(err)
	}
	return &ejectFixture{h: h, owner: owner, info: info, vm: vm, req: vsphere.EjectRequest{
		Datacenter: vcsim.Datacenter, InstanceUUID: info.InstanceUUID, BIOSUUID: info.BIOSUUID, Ownership: owner,
		DeviceKey: info.CDROMs[0].Key, ExpectedISOPath: isoPath,
	}}
}

func (f *ejectFixture) eject(t *testing.T, req vsphere.EjectRequest) *vsphere.EjectResult {
	t.Helper()
	res, err := f.h.client.EjectISO(testContext(t), req)
	if err != nil {
		t.Fatalf("EjectISO(%+v): %v", req, err)
	}
	return res
}

// pollUntil repeats an ejection step (bounded) while it reports InProgress, as a controller would on
// later reconciles.
func (f *ejectFixture) pollUntil(t *testing.T, req vsphere.EjectRequest, want vsphere.EjectState) *vsphere.EjectResult {
	t.Helper()
	for range 200 {
		res := f.eject(t, req)
		if res.State == want {
			return res
		}
		if res.State != vsphere.EjectInProgress {
			t.Fatalf("state %s, want %s", res.State, want)
		}
	}
	t.Fatalf("never reached %s", want)
	return nil
}

func (f *ejectFixture) cdrom(t *testing.T) vsphere.CDROM {
	t.Helper()
	info, err := f.h.client.FindVM(testContext(t), vcsim.Datacenter, f.info.InstanceUUID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, cd := range info.CDROMs {
		if cd.Key == f.req.DeviceKey {
			return cd
		}
	}
	t.Fatalf("CD-ROM %d vanished", f.req.DeviceKey)
	return vsphere.CDROM{}
}

func TestEjectAnswersTheConfirmedLockQuestion(t *testing.T) {
	f := newEjectFixture(t)

	started := f.eject(t, f.req)
	if started.State != vsphere.EjectInProgress || started.TaskRef == "" {
		t.Fatalf("first step = %+v", started)
	}
	req := f.req
	req.TaskRef = started.TaskRef
	pending := f.pollUntil(t, req, vsphere.EjectQuestionPending)
	if pending.QuestionID == "" {
		t.Fatal("no question id to checkpoint")
	}
	if got := f.vm.Answers(); len(got) != 0 {
		t.Fatalf("answered before confirmation: %+v", got)
	}
	if cd := f.cdrom(t); cd.ISOPath != isoPath || !cd.Connected {
		t.Fatalf("device changed before the answer: %+v", cd)
	}

	// The caller checkpointed the id and confirms exactly that question.
	req.QuestionID = pending.QuestionID
	req.ConfirmQuestionID = pending.QuestionID
	if done := f.pollUntil(t, req, vsphere.EjectDone); done.FoundEmpty {
		t.Fatalf("the recorded task emptied the drive, yet FoundEmpty: %+v", done)
	}
	answers := f.vm.Answers()
	if len(answers) != 1 || answers[0].QuestionID != pending.QuestionID || !answers[0].Yes || answers[0].Label != "button.yes" {
		t.Fatalf("answers = %+v, want one button.yes to %s", answers, pending.QuestionID)
	}
	if f.vm.Reconfigures() != 1 {
		t.Fatalf("%d reconfigures, want 1", f.vm.Reconfigures())
	}
	if cd := f.cdrom(t); cd.ISOPath != "" || cd.Connected {
		t.Fatalf("device after ejection: %+v", cd)
	}
	// Idempotent: a later call (even without the task) reports Done, and says it found the drive empty
	// (nothing it knows of emptied it), so the caller does not claim an ejection.
	if res := f.eject(t, f.req); res.State != vsphere.EjectDone || !res.FoundEmpty {
		t.Fatalf("repeat = %+v, want Done and FoundEmpty", res)
	}
}

func TestEjectWithoutLockCompletesWithoutQuestion(t *testing.T) {
	f := newEjectFixture(t)
	f.vm.SetDoorLocked(false)
	started := f.eject(t, f.req)
	req := f.req
	req.TaskRef = started.TaskRef
	f.pollUntil(t, req, vsphere.EjectDone)
	if len(f.vm.Answers()) != 0 {
		t.Fatal("a question was answered although none was asked")
	}
}

func TestEjectNeverAnswersADifferentQuestion(t *testing.T) {
	f := newEjectFixture(t)
	ctx := testContext(t)

	// Another question is pending on the VM (not ours): refused before starting anything.
	other := f.h.env.RaiseQuestion(f.vm, "msg.hbacommon.outofspace", "There is no more space for virtual disk.")
	req := f.req
	req.ConfirmQuestionID = other // even a confirmation for it must not make us answer it
	_, err := f.h.client.EjectISO(ctx, req)
	wantClass(t, err, vsphere.ClassRefused)
	if len(f.vm.Answers()) != 0 {
		t.Fatalf("answered a foreign question: %+v", f.vm.Answers())
	}

	// Clear it (as its owner would), start our ejection and checkpoint our question...
	if err := object.NewVirtualMachine(adminClient(t, f.h), f.vmRef()).Answer(ctx, other, "0"); err != nil {
		t.Fatal(err)
	}
	started := f.eject(t, f.req)
	req = f.req
	req.TaskRef = started.TaskRef
	pending := f.pollUntil(t, req, vsphere.EjectQuestionPending)

	// ...then resume with a recorded id that is not the pending one: refused, nothing answered.
	req.QuestionID = "_vmx-recorded-earlier"
	req.ConfirmQuestionID = "_vmx-recorded-earlier"
	_, err = f.h.client.EjectISO(ctx, req)
	wantClass(t, err, vsphere.ClassRefused)
	if got := f.vm.Answers(); len(got) != 1 || got[0].QuestionID != other {
		t.Fatalf("answers = %+v", got)
	}
	if cd := f.cdrom(t); cd.ISOPath != isoPath {
		t.Fatalf("device changed: %+v (pending %s)", cd, pending.QuestionID)
	}
}

func TestEjectRefusesChangedMedia(t *testing.T) {
	f := newEjectFixture(t)
	ctx := testContext(t)
	const otherISO = "[LocalDS_0] someone/else.iso"
	if err := f.h.env.SetCDROMISO(f.vm, f.req.DeviceKey, otherISO); err != nil {
		t.Fatal(err)
	}
	_, err := f.h.client.EjectISO(ctx, f.req)
	wantClass(t, err, vsphere.ClassRefused)
	if cd := f.cdrom(t); cd.ISOPath != otherISO || !cd.Connected {
		t.Fatalf("changed media was touched: %+v", cd)
	}

	// Media changed while our task waits on the question: resuming is refused, nothing answered.
	if err := f.h.env.SetCDROMISO(f.vm, f.req.DeviceKey, isoPath); err != nil {
		t.Fatal(err)
	}
	started := f.eject(t, f.req)
	req := f.req
	req.TaskRef = started.TaskRef
	pending := f.pollUntil(t, req, vsphere.EjectQuestionPending)
	if err := f.h.env.SetCDROMISO(f.vm, f.req.DeviceKey, otherISO); err != nil {
		t.Fatal(err)
	}
	req.QuestionID, req.ConfirmQuestionID = pending.QuestionID, pending.QuestionID
	_, err = f.h.client.EjectISO(ctx, req)
	wantClass(t, err, vsphere.ClassRefused)
	if len(f.vm.Answers()) != 0 {
		t.Fatal("answered although the media changed")
	}
}

func TestEjectLeavesUnrelatedMediaAttached(t *testing.T) {
	f := newEjectFixture(t)
	ctx := testContext(t)
	// A second CD-ROM with unrelated media (e.g. a driver ISO someone attached).
	const driverISO = "[LocalDS_0] drivers/virtio.iso"
	admin := adminClient(t, f.h)
	vm := object.NewVirtualMachine(admin, f.vmRef())
	devices, err := vm.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ide, err := devices.FindIDEController("")
	if err != nil {
		t.Fatal(err)
	}
	cd, err := devices.CreateCdrom(ide)
	if err != nil {
		t.Fatal(err)
	}
	if err := vm.AddDevice(ctx, devices.InsertIso(cd, driverISO)); err != nil {
		t.Fatal(err)
	}

	// Asking to eject the driver CD-ROM while expecting our ISO path: refused.
	devices, _ = vm.Device(ctx)
	var driverKey int32
	for _, d := range devices.SelectByType((*types.VirtualCdrom)(nil)) {
		if d.GetVirtualDevice().Key != f.req.DeviceKey {
			driverKey = d.GetVirtualDevice().Key
		}
	}
	wrong := f.req
	wrong.DeviceKey = driverKey
	_, err = f.h.client.EjectISO(ctx, wrong)
	wantClass(t, err, vsphere.ClassRefused)

	// Ejecting ours leaves the driver ISO attached and connected.
	f.vm.SetDoorLocked(false)
	started := f.eject(t, f.req)
	req := f.req
	req.TaskRef = started.TaskRef
	f.pollUntil(t, req, vsphere.EjectDone)
	info, err := f.h.client.FindVM(ctx, vcsim.Datacenter, f.info.InstanceUUID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range info.CDROMs {
		if c.Key == driverKey && (c.ISOPath != driverISO || !c.Connected) {
			t.Fatalf("unrelated CD-ROM changed: %+v", c)
		}
	}
}

func TestEjectRefusesWrongHardwareIdentity(t *testing.T) {
	f := newEjectFixture(t)
	req := f.req
	req.BIOSUUID = "00000000-0000-0000-0000-000000000000"
	_, err := f.h.client.EjectISO(testContext(t), req)
	wantClass(t, err, vsphere.ClassOwnership)
}

func (f *ejectFixture) vmRef() types.ManagedObjectReference { return f.vm.Self }
