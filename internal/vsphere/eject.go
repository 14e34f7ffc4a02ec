package vsphere

import (
	"context"
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
	res, err := c.ejectISO(ctx, req)
	op := "eject"
	if err == nil && res.State == EjectInProgress && req.ConfirmQuestionID != "" && res.QuestionID == req.ConfirmQuestionID {
		op = "answer"
	}
	return res, observe(op, err)
}

func (c *client) ejectISO(ctx context.Context, req EjectRequest) (*EjectResult, error) {
	if req.ExpectedISOPath == "" {
		return nil, NewError(ClassInvalid, "EjectISO", "expected ISO path is required")
	}
	d, err := c.datacenter(ctx, req.Datacenter)
	if err != nil {
		return nil, err
	}
	ref, err := c.findRef(ctx, d, req.InstanceUUID, true)
	if err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, NewError(ClassNotFound, "EjectISO", "no VM with instance UUID %q", req.InstanceUUID)
	}
	vm, err := c.readVM(ctx, *ref)
	if err != nil {
		return nil, err
	}
	cd, err := guardEject(vm, req)
	if err != nil {
		return nil, err
	}
	ejected := isoPathOf(cd) == "" && (cd.Connectable == nil || !cd.Connectable.Connected)
	if req.TaskRef != "" {
		return c.resumeEject(ctx, *ref, vm, cd, ejected, req)
	}
	if ejected {
		return &EjectResult{State: EjectDone}, nil
	}
	if isoPathOf(cd) != req.ExpectedISOPath {
		return nil, NewError(ClassRefused, "EjectISO", "CD-ROM %d holds %q, not %q: media changed",
			req.DeviceKey, isoPathOf(cd), req.ExpectedISOPath)
	}
	if q := vm.Runtime.Question; q != nil {
		// A lock question without a recorded task: our reconfigure started but its TaskRef was not
		// checkpointed (crash). Handle the question the same way; anything else is refused.
		return c.handleQuestion(ctx, *ref, q, req, "")
	}
	t, err := object.NewVirtualMachine(c.vim, *ref).Reconfigure(ctx, ejectSpec(cd))
	if err != nil {
		return nil, err
	}
	c.log.Info("started CD-ROM ejection", "vm", vm.Name, "device", req.DeviceKey, "task", t.Reference().Value)
	return &EjectResult{State: EjectInProgress, TaskRef: t.Reference().Value}, nil
}

// guardEject verifies ownership, hardware identity and the device.
func guardEject(vm *mo.VirtualMachine, req EjectRequest) (*types.VirtualCdrom, error) {
	if vm.Config == nil {
		return nil, NewError(ClassTransient, "EjectISO", "VM %q has no configuration yet", vm.Name)
	}
	if err := verifyOwnership("EjectISO", vm.Name, ownershipOf(vm.Config.ExtraConfig), req.Ownership); err != nil {
		return nil, err
	}
	if req.BIOSUUID != "" && !strings.EqualFold(vm.Config.Uuid, req.BIOSUUID) {
		return nil, NewError(ClassOwnership, "EjectISO", "VM %q has BIOS UUID %s, not the recorded %s",
			vm.Name, vm.Config.Uuid, req.BIOSUUID)
	}
	dev := object.VirtualDeviceList(vm.Config.Hardware.Device).FindByKey(req.DeviceKey)
	cd, ok := dev.(*types.VirtualCdrom)
	if !ok {
		return nil, NewError(ClassRefused, "EjectISO", "VM %q has no CD-ROM with key %d", vm.Name, req.DeviceKey)
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
	cd *types.VirtualCdrom, ejected bool, req EjectRequest) (*EjectResult, error) {
	info, err := c.taskInfo(ctx, types.ManagedObjectReference{Type: "Task", Value: req.TaskRef})
	if err != nil {
		if IsNotFound(classify("", err)) && ejected {
			return &EjectResult{State: EjectDone}, nil // task expired from vCenter's memory after success
		}
		return nil, err
	}
	switch info.State {
	case types.TaskInfoStateSuccess:
		if ejected {
			return &EjectResult{State: EjectDone}, nil
		}
		return nil, NewError(ClassRefused, "EjectISO", "CD-ROM %d holds %q after the ejection: media changed",
			req.DeviceKey, isoPathOf(cd))
	case types.TaskInfoStateError:
		return nil, taskError(info)
	}
	if !ejected && isoPathOf(cd) != req.ExpectedISOPath {
		return nil, NewError(ClassRefused, "EjectISO", "CD-ROM %d holds %q, not %q: media changed",
			req.DeviceKey, isoPathOf(cd), req.ExpectedISOPath)
	}
	if q := vm.Runtime.Question; q != nil {
		return c.handleQuestion(ctx, ref, q, req, req.TaskRef)
	}
	return &EjectResult{State: EjectInProgress, TaskRef: req.TaskRef}, nil
}

// handleQuestion reports the CD-ROM lock question, answers it "Yes" when the caller confirmed exactly this
// question, and refuses any other question.
func (c *client) handleQuestion(ctx context.Context, ref types.ManagedObjectReference,
	q *types.VirtualMachineQuestionInfo, req EjectRequest, taskRef string) (*EjectResult, error) {
	question := toQuestion(q)
	if question.MessageID != CDROMLockedMessageID {
		return nil, NewError(ClassRefused, "EjectISO", "VM has a different question pending (%s, id %s); not answering it",
			question.MessageID, question.ID)
	}
	if req.QuestionID != "" && req.QuestionID != question.ID {
		return nil, NewError(ClassRefused, "EjectISO", "question %s is pending, not the recorded %s", question.ID, req.QuestionID)
	}
	if req.ConfirmQuestionID == "" || req.ConfirmQuestionID != question.ID {
		return &EjectResult{State: EjectQuestionPending, TaskRef: taskRef, QuestionID: question.ID}, nil
	}
	yes := ""
	for _, ch := range question.Choices {
		if strings.EqualFold(strings.TrimSpace(ch.Label), "yes") {
			yes = ch.Key
			break
		}
	}
	if yes == "" {
		return nil, NewError(ClassRefused, "EjectISO", "question %s offers no \"Yes\" choice", question.ID)
	}
	if err := object.NewVirtualMachine(c.vim, ref).Answer(ctx, question.ID, yes); err != nil {
		return nil, err
	}
	c.log.Info("answered CD-ROM lock question", "question", question.ID, "task", taskRef)
	return &EjectResult{State: EjectInProgress, TaskRef: taskRef, QuestionID: question.ID}, nil
}
