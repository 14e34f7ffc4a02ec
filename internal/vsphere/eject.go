package vsphere

import (
	"context"
	"errors"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// CDROMLockedMessageID is the message of the question vSphere raises when a guest locked the CD-ROM door.
const CDROMLockedMessageID = "msg.cdromdisconnect.locked"

// EjectISO disconnects and ejects one CD-ROM of an owned VM, one step per call; it never waits on the
// reconfigure task (a guest holding the door can keep it running for minutes).
//
// The ejected device is left disconnected (also at power-on) with an empty "client device" backing
// (remote passthrough, no host device), which needs no hardware on the host and attaches nothing.
//
// Steps: first call starts the reconfigure and returns EjectInProgress with its TaskRef. Later calls with
// the TaskRef report Done when the task succeeded and the device no longer holds the ISO, or
// EjectQuestionPending with the question ID when the task waits on the CD-ROM lock question. That
// question is answered "Yes" only when ConfirmQuestionID equals the pending question's ID (the caller
// checkpointed it). Any other question is never answered and the call is refused; a device now backed by
// something other than ExpectedISOPath is refused too.
func (c *client) EjectISO(ctx context.Context, req EjectRequest) (*EjectResult, error) {
	res, answering, err := c.ejectISO(ctx, req)
	op := OpEject
	if answering {
		op = OpAnswer
	}
	return res, observe(op, err)
}

// Operations of EjectISO as counted in metrics and named in its errors: a failed or refused answer to
// the lock question is an "answer" error, everything else an "eject" error.
const (
	OpEject  = "eject"
	OpAnswer = "answer"
)

// IsAnswerError reports whether err came from answering (or refusing to answer) the CD-ROM lock question.
func IsAnswerError(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Op == OpAnswer
}

// taskFailedError marks an error from a recorded reconfigure task that ended in error: the caller
// forgets that task (and its question) and starts afresh on its next attempt.
type taskFailedError struct{ error }

func (e *taskFailedError) Unwrap() error { return e.error }

// IsEjectTaskFailed reports whether the recorded reconfigure task of an ejection ended in error.
func IsEjectTaskFailed(err error) bool {
	var t *taskFailedError
	return errors.As(err, &t)
}

// ejectProps are vmProps plus the VM's recent tasks (to find a reconfigure started before a crash).
var ejectProps = append(append([]string(nil), vmProps...), "recentTask")

// ejectISO runs one step; answering says whether this step tried to answer the lock question.
func (c *client) ejectISO(ctx context.Context, req EjectRequest) (*EjectResult, bool, error) {
	if req.ExpectedISOPath == "" {
		return nil, false, NewError(ClassInvalid, OpEject, "expected ISO path is required")
	}
	d, err := c.datacenter(ctx, req.Datacenter)
	if err != nil {
		return nil, false, err
	}
	// One retrieval: the VM with the recorded task (listed first, so the devices read are not older than
	// the task's state), or with its recent tasks to find a reconfigure an earlier attempt started.
	read := vmRead{props: ejectProps, recent: req.TaskRef == ""}
	if req.TaskRef != "" {
		read.task = &types.ManagedObjectReference{Type: "Task", Value: req.TaskRef}
	}
	ref, got, err := c.vmByUUID(ctx, d, req.InstanceUUID, read)
	if err != nil {
		return nil, false, err
	}
	if ref == nil {
		return nil, false, NewError(ClassNotFound, OpEject, "no VM with instance UUID %q", req.InstanceUUID)
	}
	vm := got.vm
	cd, err := guardEject(vm, req)
	if err != nil {
		return nil, false, err
	}
	ejected := isoPathOf(cd) == "" && (cd.Connectable == nil || !cd.Connectable.Connected)
	if req.TaskRef != "" {
		res, answering, err := c.resumeEject(ctx, *ref, vm, cd, ejected, req, got.tasks)
		if res != nil && res.State == EjectDone {
			res.VM = toVMInfo(vm)
		}
		return res, answering, err
	}
	if ejected {
		return &EjectResult{State: EjectDone, FoundEmpty: true, VM: toVMInfo(vm)}, false, nil
	}
	if isoPathOf(cd) != req.ExpectedISOPath {
		return nil, false, NewError(ClassRefused, OpEject, "CD-ROM %d holds %q, not %q: media changed",
			req.DeviceKey, isoPathOf(cd), req.ExpectedISOPath)
	}
	// No task recorded: a reconfigure may still have been started before a crash that lost its task
	// reference. Never start a second one while one runs: take it over instead.
	running := runningReconfigure(vm.RecentTask, got.tasks)
	if q := vm.Runtime.Question; q != nil {
		res, answering, err := c.handleQuestion(ctx, *ref, q, req, running)
		if res != nil {
			res.Adopted = running != ""
		}
		return res, answering, err
	}
	if running != "" {
		c.log.Info("found a running reconfigure of an earlier attempt; tracking it instead of starting another",
			"vm", vm.Name, "device", req.DeviceKey, "task", running)
		return &EjectResult{State: EjectInProgress, TaskRef: running, Adopted: true}, false, nil
	}
	t, err := object.NewVirtualMachine(c.vim, *ref).Reconfigure(ctx, ejectSpec(cd))
	if err != nil {
		return nil, false, err
	}
	c.log.Info("started CD-ROM ejection", "vm", vm.Name, "device", req.DeviceKey, "task", t.Reference().Value)
	return &EjectResult{State: EjectInProgress, TaskRef: t.Reference().Value}, false, nil
}

// runningReconfigure returns the first queued or running reconfigure task among a VM's recent tasks
// (read with the VM; a task that expired meanwhile is absent and not running).
func runningReconfigure(recent []types.ManagedObjectReference, tasks map[types.ManagedObjectReference]mo.Task) string {
	for _, ref := range recent {
		t, ok := tasks[ref]
		if ok && isReconfigureTask(&t.Info) && (t.Info.State == types.TaskInfoStateQueued || t.Info.State == types.TaskInfoStateRunning) {
			return ref.Value
		}
	}
	return ""
}

// isReconfigureTask: vCenter names it ReconfigVM_Task (description VirtualMachine.reconfigure).
func isReconfigureTask(info *types.TaskInfo) bool {
	return strings.EqualFold(info.Name, "ReconfigVM_Task") || strings.EqualFold(info.DescriptionId, "VirtualMachine.reconfigure") ||
		strings.EqualFold(info.DescriptionId, "VirtualMachine.reconfigVm")
}

// guardEject verifies ownership, hardware identity and the device.
func guardEject(vm *mo.VirtualMachine, req EjectRequest) (*types.VirtualCdrom, error) {
	if vm.Config == nil {
		return nil, NewError(ClassTransient, OpEject, "VM %q has no configuration yet", vm.Name)
	}
	if err := verifyIdentity(OpEject, vm, req.Ownership); err != nil {
		return nil, err
	}
	if req.BIOSUUID != "" && !strings.EqualFold(vm.Config.Uuid, req.BIOSUUID) {
		return nil, NewError(ClassOwnership, OpEject, "VM %q has BIOS UUID %s, not the recorded %s",
			vm.Name, vm.Config.Uuid, req.BIOSUUID)
	}
	dev := object.VirtualDeviceList(vm.Config.Hardware.Device).FindByKey(req.DeviceKey)
	cd, ok := dev.(*types.VirtualCdrom)
	if !ok {
		return nil, NewError(ClassRefused, OpEject, "VM %q has no CD-ROM with key %d", vm.Name, req.DeviceKey)
	}
	return cd, nil
}

// ejectSpec disconnects the device and replaces its ISO backing by an empty client-device backing.
func ejectSpec(cd *types.VirtualCdrom) types.VirtualMachineConfigSpec {
	dev := *cd
	dev.Backing = &types.VirtualCdromRemotePassthroughBackingInfo{
		VirtualDeviceRemoteDeviceBackingInfo: types.VirtualDeviceRemoteDeviceBackingInfo{DeviceName: ""},
	}
	connect := types.VirtualDeviceConnectInfo{}
	if cd.Connectable != nil {
		connect = *cd.Connectable
	}
	connect.Connected = false
	connect.StartConnected = false
	dev.Connectable = &connect
	return types.VirtualMachineConfigSpec{DeviceChange: []types.BaseVirtualDeviceConfigSpec{
		&types.VirtualDeviceConfigSpec{Operation: types.VirtualDeviceConfigSpecOperationEdit, Device: &dev},
	}}
}

// resumeEject checks a recorded reconfigure task.
func (c *client) resumeEject(ctx context.Context, ref types.ManagedObjectReference, vm *mo.VirtualMachine,
	cd *types.VirtualCdrom, ejected bool, req EjectRequest, tasks map[types.ManagedObjectReference]mo.Task) (*EjectResult, bool, error) {
	t, ok := tasks[types.ManagedObjectReference{Type: "Task", Value: req.TaskRef}]
	if !ok {
		if ejected {
			return &EjectResult{State: EjectDone}, false, nil // task expired from vCenter's memory after success
		}
		return nil, false, NewError(ClassNotFound, OpEject, "task %s no longer exists", req.TaskRef)
	}
	info := &t.Info
	switch info.State {
	case types.TaskInfoStateSuccess:
		if ejected {
			return &EjectResult{State: EjectDone}, false, nil
		}
		return nil, false, NewError(ClassRefused, OpEject, "CD-ROM %d holds %q after the ejection: media changed",
			req.DeviceKey, isoPathOf(cd))
	case types.TaskInfoStateError:
		return nil, false, &taskFailedError{classify(OpEject, taskError(info))}
	}
	if !ejected && isoPathOf(cd) != req.ExpectedISOPath {
		return nil, false, NewError(ClassRefused, OpEject, "CD-ROM %d holds %q, not %q: media changed",
			req.DeviceKey, isoPathOf(cd), req.ExpectedISOPath)
	}
	if q := vm.Runtime.Question; q != nil {
		return c.handleQuestion(ctx, ref, q, req, req.TaskRef)
	}
	return &EjectResult{State: EjectInProgress, TaskRef: req.TaskRef}, false, nil
}

// handleQuestion reports the CD-ROM lock question, answers it "Yes" when the caller confirmed exactly this
// question (checkpointed its ID), and refuses any other question.
func (c *client) handleQuestion(ctx context.Context, ref types.ManagedObjectReference,
	q *types.VirtualMachineQuestionInfo, req EjectRequest, taskRef string) (*EjectResult, bool, error) {
	question := toQuestion(q)
	if question.MessageID != CDROMLockedMessageID {
		return nil, false, NewError(ClassRefused, OpEject, "VM has a different question pending (%s, id %s); not answering it",
			question.MessageID, question.ID)
	}
	if req.QuestionID != "" && req.QuestionID != question.ID {
		return nil, false, NewError(ClassRefused, OpEject, "question %s is pending, not the recorded %s", question.ID, req.QuestionID)
	}
	if req.ConfirmQuestionID == "" || req.ConfirmQuestionID != question.ID {
		return &EjectResult{State: EjectQuestionPending, TaskRef: taskRef, QuestionID: question.ID}, false, nil
	}
	key, err := ChooseLockAnswer(question)
	if err != nil {
		return nil, true, err
	}
	if err := object.NewVirtualMachine(c.vim, ref).Answer(ctx, question.ID, key); err != nil {
		return nil, true, classify(OpAnswer, err)
	}
	c.log.Info("answered CD-ROM lock question", "question", question.ID, "choice", key, "task", taskRef)
	return &EjectResult{State: EjectInProgress, TaskRef: taskRef, QuestionID: question.ID, Answered: true}, true, nil
}
