package vcsim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// CDROMLockedMessageID is the message id of vSphere's CD-ROM lock question.
const CDROMLockedMessageID = "msg.cdromdisconnect.locked"

// VM is a simulator VM with behaviour the stock simulator lacks:
//   - a guest that locks the CD-ROM door: while DoorLocked (the default), disconnecting an ISO-backed,
//     connected CD-ROM of a powered-on VM leaves the reconfigure task running and raises the
//     msg.cdromdisconnect.locked question in a real vCenter's shape: choiceInfo keys "0" and "1", the
//     message key in label (button.yes, button.no) and the display text in summary (Yes, No); see
//     SetLockQuestionChoices for other shapes. AnswerVM with the "Yes" choice applies the change and ends
//     the task, any other choice fails it. The task is named like vCenter's (ReconfigVM_Task) and shows in
//     the VM's recentTask. It never blocks inside the simulator (no goroutine holds the VM lock).
//   - a count of reconfigures that disconnect an ISO (Reconfigures), to prove a crash never starts two.
//   - AnswerVM for any question (RaiseQuestion sets an unrelated one), recorded in Answers.
//   - one-shot task faults (FailNextTask): a task that is accepted and then ends in error.
//
// Swap it in with Env.WrapVM (the simulator's Map.Put pattern). Reconfigure, power, destroy, property
// reads and tags work on a wrapped VM; simulator features that assert the plain VM type (snapshots,
// guest operations, PlaceVm, ...) do not.
type VM struct {
	*simulator.VirtualMachine

	mu         sync.Mutex
	doorOpen   bool
	pending    *pendingDisconnect
	taskFaults map[string]types.BaseMethodFault
	answers    []Answer
	choices    []LockChoice
	ejects     int

	// ctl and uuid are set for a VM of a simulator in its own process (VirtualMachine is nil then): the
	// knobs act on the wrapped VM in that process.
	ctl  *controlClient
	uuid string
}

// Answer is one AnswerVM call the simulator accepted.
type Answer struct {
	QuestionID string
	ChoiceKey  string
	Label      string
	Summary    string
	// Yes: the choice meant "Yes" (it applied the disconnect).
	Yes bool
}

// LockChoice is one choice of the lock question; Yes marks the one that overrides the lock.
type LockChoice struct {
	Key, Label, Summary string
	Yes                 bool
}

// RealLockChoices is the lock question's choiceInfo as a real vCenter sends it.
var RealLockChoices = []LockChoice{
	{Key: "0", Label: "button.yes", Summary: "Yes", Yes: true},
	{Key: "1", Label: "button.no", Summary: "No"},
}

type pendingDisconnect struct {
	task       *simulator.Task
	req        types.ReconfigVM_Task
	questionID string
	choices    []LockChoice
}

var (
	taskCounter     atomic.Int64
	questionCounter atomic.Int64
)

// WrapVM swaps the VM with that instance UUID for a *VM (door locked) and returns it.
func (e *Env) WrapVM(instanceUUID string) (*VM, error) {
	if e.ctl != nil {
		if err := e.ctl.call("vm/wrap", uuidReq{UUID: instanceUUID}, nil); err != nil {
			return nil, err
		}
		return &VM{ctl: e.ctl, uuid: instanceUUID}, nil
	}
	base := e.VMByInstanceUUID(instanceUUID)
	if base == nil {
		return nil, fmt.Errorf("no simulator VM with instance UUID %s", instanceUUID)
	}
	if w, ok := e.Map().Get(base.Self).(*VM); ok {
		return w, nil
	}
	w := &VM{VirtualMachine: base, taskFaults: map[string]types.BaseMethodFault{}, choices: RealLockChoices}
	e.Map().Put(w)
	return w, nil
}

// SetDoorLocked says whether the guest holds the CD-ROM door locked.
func (v *VM) SetDoorLocked(locked bool) {
	if v.ctl != nil {
		v.ctl.must("vm/door", doorReq{UUID: v.uuid, Locked: locked}, nil)
		return
	}
	v.mu.Lock()
	v.doorOpen = !locked
	v.mu.Unlock()
}

// SetLockQuestionChoices changes the choices of later lock questions (e.g. reversed or localized).
func (v *VM) SetLockQuestionChoices(choices []LockChoice) {
	if v.ctl != nil {
		v.ctl.must("vm/choices", choicesReq{UUID: v.uuid, Choices: choices}, nil)
		return
	}
	v.mu.Lock()
	v.choices = append([]LockChoice(nil), choices...)
	v.mu.Unlock()
}

// Reconfigures counts reconfigure calls that disconnect an ISO-backed CD-ROM (accepted, waiting on the
// lock question, or refused because another one waits), whoever made them.
func (v *VM) Reconfigures() int {
	if v.ctl != nil {
		var res countResp
		v.ctl.must("vm/reconfigures", uuidReq{UUID: v.uuid}, &res)
		return res.Count
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.ejects
}

// QuestionPending reports the ID of the pending question, if any.
func (e *Env) QuestionPending(v *VM) string {
	if v.ctl != nil {
		var res idResp
		v.ctl.must("vm/question", uuidReq{UUID: v.uuid}, &res)
		return res.ID
	}
	id := ""
	e.withLock(v, func() {
		if q := v.Runtime.Question; q != nil {
			id = q.Id
		}
	})
	return id
}

// FailNextTask makes the next task of method ("ReconfigVM_Task", "PowerOnVM_Task", "PowerOffVM_Task",
// "Destroy_Task") start normally and end in error with fault.
func (v *VM) FailNextTask(method string, fault types.BaseMethodFault) {
	if v.ctl != nil {
		raw, err := encodeFault(fault)
		if err != nil {
			panic(err)
		}
		v.ctl.must("vm/fail-next-task", failTaskReq{UUID: v.uuid, Method: method, Fault: raw}, nil)
		return
	}
	v.mu.Lock()
	v.taskFaults[method] = fault
	v.mu.Unlock()
}

// Answers returns the answers the VM received.
func (v *VM) Answers() []Answer {
	if v.ctl != nil {
		var res answersResp
		v.ctl.must("vm/answers", uuidReq{UUID: v.uuid}, &res)
		return res.Answers
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]Answer(nil), v.answers...)
}

// RaiseQuestion sets an arbitrary pending question (not tied to a task), e.g. an unrelated one that a
// client must never answer. Returns its id.
func (e *Env) RaiseQuestion(v *VM, messageID, text string) string {
	if v.ctl != nil {
		var res idResp
		v.ctl.must("vm/raise-question", raiseReq{UUID: v.uuid, MessageID: messageID, Text: text}, &res)
		return res.ID
	}
	id := fmt.Sprintf("_vmx%d", questionCounter.Add(1))
	ctx := e.lockContext()
	e.Map().WithLock(ctx, v, func() {
		ctx.Update(v, []types.PropertyChange{{Name: "runtime.question", Val: question(id, messageID, text, RealLockChoices)}})
	})
	return id
}

// SetCDROMISO changes the ISO behind a CD-ROM out of band ("someone changed the media").
func (e *Env) SetCDROMISO(v *VM, key int32, iso string) error {
	if v.ctl != nil {
		return v.ctl.call("vm/cdrom-iso", cdromReq{UUID: v.uuid, Key: key, ISO: iso}, nil)
	}
	ctx := e.lockContext()
	var err error
	e.Map().WithLock(ctx, v, func() {
		for _, d := range v.Config.Hardware.Device {
			if cd, ok := d.(*types.VirtualCdrom); ok && cd.Key == key {
				cd.Backing = &types.VirtualCdromIsoBackingInfo{VirtualDeviceFileBackingInfo: types.VirtualDeviceFileBackingInfo{FileName: iso}}
				// vCenter gives every configuration change a new config.changeVersion, whoever made it.
				ctx.Update(v, []types.PropertyChange{{Name: "config.changeVersion", Val: fmt.Sprint(time.Now().UnixNano())}})
				return
			}
		}
		err = fmt.Errorf("no CD-ROM %d", key)
	})
	return err
}

func (e *Env) lockContext() *simulator.Context {
	return &simulator.Context{Context: context.Background(), Map: e.Map(), Session: e.Model.Service.Context.Session}
}

func question(id, messageID, text string, choices []LockChoice) *types.VirtualMachineQuestionInfo {
	info := make([]types.BaseElementDescription, 0, len(choices))
	def := int32(0)
	for i, c := range choices {
		info = append(info, &types.ElementDescription{Description: types.Description{Label: c.Label, Summary: c.Summary}, Key: c.Key})
		if !c.Yes {
			def = int32(i) // vCenter defaults to the safe answer
		}
	}
	return &types.VirtualMachineQuestionInfo{
		Id:   id,
		Text: text,
		Choice: types.ChoiceOption{
			OptionType:   types.OptionType{ValueIsReadonly: types.NewBool(false)},
			ChoiceInfo:   info,
			DefaultIndex: def,
		},
		Message: []types.VirtualMachineMessage{{Id: messageID, Text: text}},
	}
}

// takeFault returns and clears a one-shot task fault.
func (v *VM) takeFault(method string) types.BaseMethodFault {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := v.taskFaults[method]
	delete(v.taskFaults, method)
	return f
}

func (v *VM) failedTask(ctx *simulator.Context, name string, f types.BaseMethodFault) types.ManagedObjectReference {
	return simulator.CreateTask(v.Self, name, func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		return nil, f
	}).Run(ctx)
}

// PowerOnVMTask honours FailNextTask.
func (v *VM) PowerOnVMTask(ctx *simulator.Context, req *types.PowerOnVM_Task) soap.HasFault {
	if f := v.takeFault("PowerOnVM_Task"); f != nil {
		return &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: v.failedTask(ctx, "powerOn", f)}}
	}
	return v.VirtualMachine.PowerOnVMTask(ctx, req)
}

// PowerOffVMTask honours FailNextTask.
func (v *VM) PowerOffVMTask(ctx *simulator.Context, req *types.PowerOffVM_Task) soap.HasFault {
	if f := v.takeFault("PowerOffVM_Task"); f != nil {
		return &methods.PowerOffVM_TaskBody{Res: &types.PowerOffVM_TaskResponse{Returnval: v.failedTask(ctx, "powerOff", f)}}
	}
	return v.VirtualMachine.PowerOffVMTask(ctx, req)
}

// DestroyTask honours FailNextTask.
func (v *VM) DestroyTask(ctx *simulator.Context, req *types.Destroy_Task) soap.HasFault {
	if f := v.takeFault("Destroy_Task"); f != nil {
		return &methods.Destroy_TaskBody{Res: &types.Destroy_TaskResponse{Returnval: v.failedTask(ctx, "destroy", f)}}
	}
	return v.VirtualMachine.DestroyTask(ctx, req)
}

// ReconfigVMTask honours FailNextTask and raises the lock question on a CD-ROM disconnect.
func (v *VM) ReconfigVMTask(ctx *simulator.Context, req *types.ReconfigVM_Task) soap.HasFault {
	if f := v.takeFault("ReconfigVM_Task"); f != nil {
		return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: v.failedTask(ctx, "reconfigVm", f)}}
	}
	disconnects := v.disconnectsISO(&req.Spec)
	v.mu.Lock()
	locked, busy, choices := !v.doorOpen, v.pending != nil, v.choices
	if disconnects {
		v.ejects++ // every attempt counts, also one refused because another waits on the question
	}
	v.mu.Unlock()
	if busy {
		return &methods.ReconfigVM_TaskBody{Fault_: simulator.Fault("another reconfigure waits on a question", &types.TaskInProgress{})}
	}
	if !locked || v.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn || !disconnects {
		return v.VirtualMachine.ReconfigVMTask(ctx, req)
	}

	// A running task without an executor: it ends only when AnswerVM finishes it. Named as vCenter names
	// it, so a client looking for a running reconfigure among the VM's recent tasks finds it.
	task := simulator.CreateTask(v.Self, "reconfigVm", nil)
	task.Info.Name = "ReconfigVM_Task"
	task.Info.DescriptionId = "VirtualMachine.reconfigure"
	task.Self = types.ManagedObjectReference{Type: "Task", Value: fmt.Sprintf("task-cdlock-%d", taskCounter.Add(1))}
	task.Info.Key = task.Self.Value
	task.Info.Task = task.Self
	task.Info.State = types.TaskInfoStateRunning
	now := time.Now()
	task.Info.StartTime = &now
	ctx.Map.Put(task)

	id := fmt.Sprintf("_vmx%d", questionCounter.Add(1))
	ctx.Update(v, []types.PropertyChange{{Name: "runtime.question", Val: question(id, CDROMLockedMessageID,
		"The guest operating system has locked the CD-ROM door and is probably using the CD-ROM, which can "+
			"prevent the guest from recognizing media changes. If possible, eject the CD-ROM from inside the "+
			"guest before disconnecting. Disconnect anyway and override the lock?", choices)}})
	v.mu.Lock()
	v.pending = &pendingDisconnect{task: task, req: *req, questionID: id, choices: choices}
	v.mu.Unlock()
	return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: task.Self}}
}

// disconnectsISO: the spec disconnects (or removes the ISO of) a connected, ISO-backed CD-ROM.
func (v *VM) disconnectsISO(spec *types.VirtualMachineConfigSpec) bool {
	for _, ch := range spec.DeviceChange {
		dc := ch.GetVirtualDeviceConfigSpec()
		newCD, ok := dc.Device.(*types.VirtualCdrom)
		if !ok || dc.Operation == types.VirtualDeviceConfigSpecOperationAdd {
			continue
		}
		for _, d := range v.Config.Hardware.Device {
			cur, ok := d.(*types.VirtualCdrom)
			if !ok || cur.Key != newCD.Key {
				continue
			}
			_, iso := cur.Backing.(*types.VirtualCdromIsoBackingInfo)
			connected := cur.Connectable != nil && cur.Connectable.Connected
			_, stillISO := newCD.Backing.(*types.VirtualCdromIsoBackingInfo)
			stillConnected := newCD.Connectable != nil && newCD.Connectable.Connected
			if iso && connected && (dc.Operation == types.VirtualDeviceConfigSpecOperationRemove || !stillConnected || !stillISO) {
				return true
			}
		}
	}
	return false
}

// AnswerVM answers the pending question. For the lock question, "Yes" applies the waiting reconfigure
// and ends its task when the change is done; "No" fails the task.
func (v *VM) AnswerVM(ctx *simulator.Context, req *types.AnswerVM) soap.HasFault {
	body := &methods.AnswerVMBody{}
	q := v.Runtime.Question
	if q == nil || q.Id != req.QuestionId {
		body.Fault_ = simulator.Fault("no such question", &types.InvalidArgument{InvalidProperty: "questionId"})
		return body
	}
	var chosen *types.ElementDescription
	for _, ch := range q.Choice.ChoiceInfo {
		if d := ch.GetElementDescription(); d.Key == req.AnswerChoice {
			chosen = d
		}
	}
	if chosen == nil {
		body.Fault_ = simulator.Fault("no such choice", &types.InvalidArgument{InvalidProperty: "answerChoice"})
		return body
	}
	v.Runtime.Question = nil // we hold the VM's lock (the simulator locks the handler for the call)
	v.mu.Lock()
	asked := v.choices
	if v.pending != nil && v.pending.questionID == req.QuestionId {
		asked = v.pending.choices
	}
	yes := false
	for _, c := range asked {
		if c.Key == chosen.Key && c.Yes {
			yes = true
		}
	}
	v.answers = append(v.answers, Answer{QuestionID: req.QuestionId, ChoiceKey: req.AnswerChoice, Label: chosen.Label, Summary: chosen.Summary, Yes: yes})
	p := v.pending
	if p != nil && p.questionID == req.QuestionId {
		v.pending = nil
	} else {
		p = nil
	}
	v.mu.Unlock()
	body.Res = &types.AnswerVMResponse{}
	if p == nil {
		return body
	}
	if !yes {
		v.finish(ctx, p.task, &types.GenericVmConfigFault{Reason: "the guest holds the CD-ROM door locked"})
		return body
	}
	// The stock reconfigure runs asynchronously (it takes the VM lock we hold now); end our task after it.
	innerRef := v.VirtualMachine.ReconfigVMTask(ctx, &p.req).(*methods.ReconfigVM_TaskBody).Res.Returnval
	inner, _ := ctx.Map.Get(innerRef).(*simulator.Task)
	go func() {
		var fault types.BaseMethodFault
		if inner != nil {
			inner.Wait()
			lc := &simulator.Context{Context: context.Background(), Map: ctx.Map, Session: ctx.Session}
			ctx.Map.WithLock(lc, inner, func() {
				if inner.Info.Error != nil {
					fault = inner.Info.Error.Fault
				}
			})
		}
		v.finish(ctx, p.task, fault)
	}()
	return body
}

// finish ends a lock-pending task with success or fault.
func (v *VM) finish(ctx *simulator.Context, task *simulator.Task, fault types.BaseMethodFault) {
	lc := &simulator.Context{Context: context.Background(), Map: ctx.Map, Session: ctx.Session}
	changes := []types.PropertyChange{
		{Name: "info.completeTime", Val: time.Now()},
		{Name: "info.state", Val: types.TaskInfoStateSuccess},
	}
	if fault != nil {
		changes[1].Val = types.TaskInfoStateError
		changes = append(changes, types.PropertyChange{Name: "info.error", Val: types.LocalizedMethodFault{
			Fault: fault, LocalizedMessage: fmt.Sprintf("%T", fault)}})
	}
	ctx.Map.AtomicUpdate(lc, task, changes)
}
