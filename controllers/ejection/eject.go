package ejection

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Ejection (SPEC §6), one step per pass so a reconcile never waits on a task a guest holds:
//  1. trigger: the Agent reports Installed=True (or, with spec.iso.recoverDiscoveryBoot, its host booted
//     the discovery image again: installing-pending-user-action), the VM is bound, its Machine is not
//     being deleted, and the served CRD keeps every recovery field (crdGuard);
//  2. record first: status.isoEjection names the VM, ownership, datacenter, device, exact ISO path and
//     the Agent's UID; one CD-ROM at a time, until no CD-ROM holds one of our ISOs;
//  3. start the reconfigure (TaskRef recorded), check it on later passes; after a crash that lost the
//     TaskRef, the vSphere layer takes over the running reconfigure instead of starting another;
//  4. if the guest locked the door, checkpoint the question ID, and only then answer "Yes" to it;
//  5. clear the record after success. Refusals (media changed, another question, Agent replaced) are
//     retried with backoff and never forced.

const (
	ejectFirstCheck = time.Second
	// PollInterval is how often a running reconfigure (and a deletion waiting for one) is looked at again.
	PollInterval     = 5 * time.Second
	ejectBackoffBase = 30 * time.Second
	ejectBackoffMax  = 10 * time.Minute
)

// Crash points of an ejection (internal/crashpoint), where Options.CrashPoint is called.
const (
	CrashAfterRecord      = crashpoint.EjectionRecordWritten  // the record is persisted, nothing started
	CrashAfterReconfigure = crashpoint.ReconfigureStarted     // the reconfigure started, its task not yet checkpointed
	CrashAfterQuestionID  = crashpoint.QuestionIDCheckpointed // the question ID is checkpointed, not yet answered
	CrashAfterAnswer      = crashpoint.AnswerSent             // the question was answered, not yet recorded
)

// Step is the VsphereAgent's ISO ejection phase (opt-in per pool): it starts an ejection when its
// trigger holds, or advances a recorded one by one step.
func (e *Ejector) Step(ctx context.Context, p *Pass) error {
	va := p.VA
	if rec := va.Status.ISOEjection; rec != nil {
		if rec.Armed && !e.started(va.UID) {
			return e.stepArmed(ctx, p)
		}
		// A started operation always finishes, even if the pool opted out meanwhile.
		return e.stepEjection(ctx, p)
	}
	if !ejects(p) {
		// A Disabled condition already says why (e.g. an armed record dropped): kept.
		if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionISOEjected); c == nil || (!finished(c) && c.Reason != afv1.ReasonDisabled) {
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonDisabled, "spec.iso.ejectAfterInstall is false", va.Generation)
		}
		return nil
	}
	return e.startEjection(ctx, p)
}

// startEjection checks the trigger and records the next CD-ROM to eject.
func (e *Ejector) startEjection(ctx context.Context, p *Pass) error {
	va := p.VA
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionISOEjected); c != nil && finished(c) && c.Status == metav1.ConditionTrue {
		return nil
	}
	if reason, msg := ejectionTrigger(p); reason != "" {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, reason, msg, va.Generation)
		if reason == afv1.ReasonWaitingForInstallation && va.Status.VM.Phase == afv1.VMPhaseBound && p.Agent != nil {
			return e.arm(ctx, p) // written with Bound: no write of its own when the ejection starts
		}
		return nil
	}
	if m, deleting, err := e.machineDeleting(ctx, p); err != nil {
		return err
	} else if deleting {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonDisabled,
			"not started: Machine "+m+" is being deleted (scale-down); no new ejection for it", va.Generation)
		return nil
	}
	if ok, msg := e.Guard.Supported(ctx); !ok {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, "not started: "+msg, va.Generation)
		p.requeueAfter(e.Guard.Interval)
		return nil
	}
	vs, err := p.Client(ctx)
	if err != nil {
		return err
	}
	dc := poolspec.DatacenterOf(va, p.Pool)
	info, err := vs.FindVM(ctx, dc, va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID)
	if err != nil {
		return err
	}
	ours, unrelated := e.classifyMedia(p, info)
	if len(ours) == 0 {
		e.markNotAttached(p, "no CD-ROM holds this pool's discovery ISO and this operator ejected none: it was removed outside the operator (by whom is not known)", unrelated)
		return nil
	}
	target := ours[0]
	va.Status.ISOEjection = &afv1.ISOEjectionRecord{
		InstanceUUID: va.Status.VM.InstanceUUID, BIOSUUID: va.Status.VM.BIOSUUID, OwnerUID: string(va.UID),
		Datacenter: dc, DeviceKey: target.Key, ISOPath: target.ISOPath, AgentUID: string(p.Agent.UID),
		StartedAt: metav1.NewTime(e.Clock.Now()),
	}
	msg := fmt.Sprintf("ejection of %s (CD-ROM %d) recorded", target.ISOPath, target.Key)
	if n := len(ours) - 1; n > 0 {
		msg += fmt.Sprintf("; %d more CD-ROM(s) with this pool's ISO follow", n)
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, msg+unrelatedNote(unrelated), va.Generation)
	// The record is persisted by this pass's status write before anything touches the VM.
	p.requeueAfter(time.Millisecond)
	return nil
}

// recovering reports whether the pass's worker booted its discovery image again and the pool recovers such
// workers (spec.iso.recoverDiscoveryBoot): its ISO is ejected although the Agent is not installed, before
// the VsphereAgent's recovery phase resets the VM.
func recovering(p *Pass) bool {
	return p.Pool != nil && p.Pool.Spec.ISO.RecoverDiscoveryBoot && p.Agent != nil && p.Agent.BootedDiscoveryAgain() &&
		p.VA.Status.VM.Phase == afv1.VMPhaseBound
}

// ejects reports whether the pass's VM has its ISO ejected: after installation (spec.iso.ejectAfterInstall),
// or to recover a worker that booted discovery again.
func ejects(p *Pass) bool {
	return p.Pool != nil && (p.Pool.Spec.ISO.EjectAfterInstall || recovering(p))
}

// ejectionTrigger returns the ISOEjected reason and message while ejection must not start ("" when it may).
func ejectionTrigger(p *Pass) (string, string) {
	va, a := p.VA, p.Agent
	switch {
	case va.Status.VM.Phase == afv1.VMPhaseReleased:
		return afv1.ReasonDisabled, "not started: the VM is released (scale-down); its cleanup follows"
	case a == nil:
		return afv1.ReasonWaitingForInstallation, "waiting for the VM's Agent to register and report Installed=True"
	case !a.IsInstalled() && !recovering(p):
		// The status only, not the reason: the reason moves with every step of an installation, and a
		// message that echoes it would rewrite this VsphereAgent's status at each one.
		installed := "absent"
		if c, ok := agents.FindCondition(a.Conditions, "Installed"); ok {
			installed = c.Status
		}
		bound := ""
		if a.IsBound() {
			bound = " is bound but"
		}
		return afv1.ReasonWaitingForInstallation, fmt.Sprintf("Agent %s%s reports Installed=%s; ejection waits for Installed=True", a.Name, bound, installed)
	case va.Status.VM.Phase != afv1.VMPhaseBound:
		return afv1.ReasonWaitingForInstallation, "Agent " + a.Name + " is installed but the VM is " + string(va.Status.VM.Phase) + ", not Bound"
	}
	return "", ""
}

// classifyMedia splits the VM's ISO-backed CD-ROMs into ours (a content-addressed ISO on the pool's ISO
// datastore under its path prefix, or the exact ISO recorded at creation) and unrelated media.
func (e *Ejector) classifyMedia(p *Pass, info *vsphere.VMInfo) (ours []vsphere.CDROM, unrelated []string) {
	prefix, ds := iso.PathPrefix(p.Pool), p.Pool.Spec.VSphere.ISODatastore
	for _, cd := range info.CDROMs {
		switch {
		case cd.ISOPath == "":
		case iso.IsCachedISOPath(cd.ISOPath, ds, prefix) || cd.ISOPath == p.VA.Status.VM.ISOPath:
			ours = append(ours, cd)
		default:
			unrelated = append(unrelated, cd.ISOPath)
		}
	}
	return ours, unrelated
}

func unrelatedNote(unrelated []string) string {
	if len(unrelated) == 0 {
		return ""
	}
	return "; unrelated media left attached: " + strings.Join(unrelated, ", ")
}

// markEjected sets ISOEjected=True/Ejected; unrelated media left attached is named, with a Warning event
// when the condition first becomes Ejected.
func (e *Ejector) markEjected(p *Pass, msg string, unrelated []string) {
	va := p.VA
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionISOEjected)
	first := c == nil || c.Reason != afv1.ReasonEjected
	if first && len(unrelated) > 0 {
		e.Recorder.Eventf(va, nil, "Warning", afv1.ReasonUnrelatedMediaAttached, events.ActionEjectISO, "VM %s keeps media this pool does not own attached: %s",
			va.Status.VM.Name, strings.Join(unrelated, ", "))
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, true, afv1.ReasonEjected, msg+unrelatedNote(unrelated), va.Generation)
}

// markNotAttached sets ISOEjected=True/NotAttached: the drive holds none of the pool's ISOs although this
// operator ejected nothing. Users read Ejected as "the operator ejected it", so this says what was seen.
func (e *Ejector) markNotAttached(p *Pass, msg string, unrelated []string) {
	va := p.VA
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionISOEjected); c == nil || c.Reason != afv1.ReasonNotAttached {
		e.Recorder.Eventf(va, nil, "Normal", afv1.ReasonISONotAttached, events.ActionEjectISO, "VM %s: %s", va.Status.VM.Name, msg)
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, true, afv1.ReasonNotAttached, msg+unrelatedNote(unrelated), va.Generation)
}

// foundEmpty closes a recorded ejection whose CD-ROM was already empty with no task of ours known: no
// ejection is counted; other CD-ROMs with the pool's ISO are still ejected.
func (e *Ejector) foundEmpty(ctx context.Context, p *Pass, vs vsphere.Client, read *vsphere.VMInfo) error {
	va, rec := p.VA, p.VA.Status.ISOEjection
	va.Status.ISOEjection = nil
	info, err := vmAfterEject(ctx, vs, rec, read)
	if err != nil {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress,
			fmt.Sprintf("CD-ROM %d was found empty; checking the VM's other CD-ROMs", rec.DeviceKey), va.Generation)
		p.requeueAfter(time.Second)
		return nil
	}
	if ours, unrelated := e.classifyMedia(p, info); len(ours) == 0 {
		e.markNotAttached(p, fmt.Sprintf("CD-ROM %d no longer held %s when the recorded ejection ran and no task of this operator emptied it: removed outside the operator, or by an attempt interrupted before it recorded its task", rec.DeviceKey, rec.ISOPath), unrelated)
		return nil
	}
	p.requeueAfter(time.Millisecond) // the next pass records the next CD-ROM with our ISO
	return nil
}

// finished reports whether an ISOEjected condition is final: ejected by us, or found not attached.
func finished(c *metav1.Condition) bool {
	return c.Reason == afv1.ReasonEjected || c.Reason == afv1.ReasonNotAttached
}

// stepEjection advances a recorded ejection by one step.
func (e *Ejector) stepEjection(ctx context.Context, p *Pass) error {
	va, rec := p.VA, p.VA.Status.ISOEjection
	now := e.Clock.Now()
	if ok, msg := e.Guard.Supported(ctx); !ok {
		// Writing the record through a CRD that prunes it could lose a checkpoint: hold still.
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, "recorded ejection of "+rec.ISOPath+" paused: "+msg, va.Generation)
		p.requeueAfter(e.Guard.Interval)
		return nil
	}
	if rec.RetryAfter != nil && now.Before(rec.RetryAfter.Time) {
		p.requeueAfter(rec.RetryAfter.Sub(now))
		return nil
	}
	if p.Agent != nil && rec.AgentUID != "" && string(p.Agent.UID) != rec.AgentUID {
		e.ejectionFailed(p, fmt.Errorf("refused: the VM's Agent was replaced since the ejection was recorded (Agent %s has UID %s, recorded %s)",
			p.Agent.Name, p.Agent.UID, rec.AgentUID), metrics.ISOOpEject)
		return nil
	}
	if rec.TaskRef == "" && rec.QuestionID == "" && rec.Attempts == 0 && !e.started(va.UID) && p.Agent != nil && !p.Agent.IsInstalled() && !recovering(p) {
		// Never started and the Agent is not installed: a record written ahead whose armed mark was lost
		// (an outdated CRD pruned it) waits like an armed one.
		rec.Armed = true
		return nil
	}
	if rec.TaskRef == "" && rec.QuestionID == "" && rec.Attempts == 0 {
		if err := crashpoint.Hit(ctx, CrashAfterRecord); err != nil {
			return err
		}
	}
	if rec.QuestionID != "" {
		if err := crashpoint.Hit(ctx, CrashAfterQuestionID); err != nil {
			return err
		}
	}
	vs, err := p.Client(ctx)
	if err != nil {
		return err
	}
	taskRef := rec.TaskRef
	remembered, _ := e.tasks.LoadAndDelete(va.UID)
	if taskRef == "" && rec.QuestionID == "" && remembered != nil {
		taskRef = remembered.(string)
	}
	req := vsphere.EjectRequest{
		Datacenter: rec.Datacenter, InstanceUUID: rec.InstanceUUID, BIOSUUID: rec.BIOSUUID,
		Ownership: vsphere.Ownership{OwnerUID: rec.OwnerUID}, DeviceKey: rec.DeviceKey, ExpectedISOPath: rec.ISOPath,
		TaskRef: taskRef, QuestionID: rec.QuestionID, ConfirmQuestionID: rec.QuestionID,
	}
	res, err := vs.EjectISO(ctx, req)
	// The VM may be touched from here on: the record is no longer armed (persisted with the next write).
	armed := rec.Armed
	rec.Armed = false
	if err != nil {
		return e.ejectStepFailed(p, err)
	}
	if res.Answered {
		metrics.ObserveISOOperation(metrics.ISOOpAnswer, metrics.ResultSuccess)
		e.Recorder.Eventf(va, nil, "Normal", afv1.ReasonCDROMLockAnswered, events.ActionEjectISO, "answered the CD-ROM lock question %s of VM %s with Yes (recorded operation only)", res.QuestionID, va.Status.VM.Name)
		if err := crashpoint.Hit(ctx, CrashAfterAnswer); err != nil {
			return err
		}
	}
	if res.Adopted {
		e.Recorder.Eventf(va, nil, "Normal", afv1.ReasonEjectionResumed, events.ActionEjectISO, "found reconfigure task %s of an earlier attempt running on VM %s; tracking it instead of starting another", res.TaskRef, va.Status.VM.Name)
	}
	if rec.LastError != "" {
		rec.Attempts = 0 // progress again: a later failure starts its backoff afresh
	}
	rec.RetryAfter, rec.LastError = nil, ""
	switch res.State {
	case vsphere.EjectDone:
		if res.FoundEmpty && req.TaskRef == "" && rec.QuestionID == "" {
			return e.foundEmpty(ctx, p, vs, res.VM)
		}
		return e.ejectionDone(ctx, p, vs, res.VM)
	case vsphere.EjectQuestionPending:
		if rec.QuestionID != res.QuestionID {
			// Checkpoint the question ID first; the next pass answers exactly this question.
			rec.QuestionID = res.QuestionID
			e.Recorder.Eventf(va, nil, "Normal", afv1.ReasonCDROMLockQuestion, events.ActionEjectISO, "guest locked the CD-ROM door; answering question %s after recording it", res.QuestionID)
		}
		rec.TaskRef = res.TaskRef
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, "CD-ROM lock question "+res.QuestionID+" recorded", va.Generation)
		p.requeueAfter(time.Millisecond)
	default:
		if rec.TaskRef == "" && res.TaskRef != "" && remembered != res.TaskRef {
			// First sight of the reconfigure: most end within a second, so look again shortly and write
			// the task into the record only if it still runs then (a status write saved per VM). A
			// restart in between loses nothing: the vSphere layer takes over a running reconfigure, and
			// a finished one shows in the device.
			e.tasks.Store(va.UID, res.TaskRef)
			rec.Armed = armed // nothing to write yet; e.tasks says it started
			p.requeueAfter(ejectFirstCheck)
			if !res.Adopted {
				return crashpoint.Hit(ctx, CrashAfterReconfigure)
			}
			return nil
		}
		newTask := res.TaskRef != "" && rec.TaskRef == "" && remembered == nil
		if res.TaskRef != "" {
			rec.TaskRef = res.TaskRef
		}
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, "ejecting "+rec.ISOPath+" (task "+rec.TaskRef+")", va.Generation)
		p.requeueAfter(PollInterval)
		if newTask && !res.Adopted {
			return crashpoint.Hit(ctx, CrashAfterReconfigure)
		}
	}
	return nil
}

// ejectionDone clears the record and looks at the VM again: another CD-ROM with our ISO is ejected next
// (if the feature is still on); Ejected only when none is left.
func (e *Ejector) ejectionDone(ctx context.Context, p *Pass, vs vsphere.Client, read *vsphere.VMInfo) error {
	va, rec := p.VA, p.VA.Status.ISOEjection
	// A pass working from a stale cache sees the same ejection done again; its status write conflicts, so
	// counting after the write counts each ejection once.
	p.afterWrite(func() {
		metrics.ObserveISOOperation(metrics.ISOOpEject, metrics.ResultSuccess)
		if p.Pool == nil { // the pool is gone: the VsphereAgent is all there is to tell
			e.Recorder.Eventf(va, nil, "Normal", afv1.ReasonISOEjected, events.ActionEjectISO, "ejected discovery ISO %s (CD-ROM %d) from VM %s", rec.ISOPath, rec.DeviceKey, va.Status.VM.Name)
			return
		}
		e.Recorder.Batch(p.Pool, afv1.ReasonISOEjected, events.ActionEjectISO, events.SummaryISOEjected(rec.ISOPath),
			fmt.Sprintf("%s (VsphereAgent %s, CD-ROM %d)", va.Status.VM.Name, va.Name, rec.DeviceKey))
	})
	va.Status.ISOEjection = nil
	done := "discovery ISO " + rec.ISOPath + " ejected"
	info, err := vmAfterEject(ctx, vs, rec, read)
	if err != nil {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, done+"; checking the VM's other CD-ROMs", va.Generation)
		p.requeueAfter(time.Second)
		return nil
	}
	ours, unrelated := e.classifyMedia(p, info)
	switch {
	case len(ours) == 0:
		e.markEjected(p, done, unrelated)
	case ejects(p):
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress,
			fmt.Sprintf("%s; %d more CD-ROM(s) with this pool's ISO follow", done, len(ours))+unrelatedNote(unrelated), va.Generation)
		p.requeueAfter(time.Millisecond)
	default:
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonDisabled,
			fmt.Sprintf("%s; spec.iso.ejectAfterInstall is false, so %s stays attached", done, ours[0].ISOPath), va.Generation)
	}
	return nil
}

// vmAfterEject is the VM as the finished step read it (its CD-ROMs after the reconfigure), else read again.
func vmAfterEject(ctx context.Context, vs vsphere.Client, rec *afv1.ISOEjectionRecord, read *vsphere.VMInfo) (*vsphere.VMInfo, error) {
	if read != nil {
		return read, nil
	}
	return vs.FindVM(ctx, rec.Datacenter, rec.InstanceUUID, rec.BIOSUUID)
}

// ejectStepFailed records a failed step: backoff, condition, event (once per distinct error), metric.
func (e *Ejector) ejectStepFailed(p *Pass, err error) error {
	va, rec := p.VA, p.VA.Status.ISOEjection
	if vsphere.IsNotFound(err) {
		e.Recorder.Eventf(va, nil, "Warning", afv1.ReasonISOEjectionClosed, events.ActionEjectISO, "VM %s is gone; ejection record of %s closed", va.Status.VM.Name, rec.ISOPath)
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, "the VM is gone; nothing left to eject", va.Generation)
		va.Status.ISOEjection = nil
		return nil
	}
	if vsphere.IsEjectTaskFailed(err) {
		rec.TaskRef, rec.QuestionID = "", "" // that task is over: the next attempt starts afresh
	}
	op := metrics.ISOOpEject
	if vsphere.IsAnswerError(err) {
		op = metrics.ISOOpAnswer
	}
	e.ejectionFailed(p, err, op)
	return nil
}

// ejectionFailed keeps the record, backs off and reports (no vSphere call happens until RetryAfter).
func (e *Ejector) ejectionFailed(p *Pass, err error, op string) {
	va, rec := p.VA, p.VA.Status.ISOEjection
	now := e.Clock.Now()
	rec.Attempts++
	changed := rec.LastError != err.Error()
	rec.LastError = err.Error()
	delay := backoffDelay(rec.Attempts)
	t := metav1.NewTime(now.Add(delay))
	rec.RetryAfter = &t
	metrics.ObserveISOOperation(op, metrics.ResultFailure)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed,
		fmt.Sprintf("%s of %s failed (attempt %d): %v; retrying in %s", op, rec.ISOPath, rec.Attempts, err, delay), va.Generation)
	if changed {
		e.Recorder.Eventf(va, nil, "Warning", afv1.ReasonISOEjectionFailed, events.ActionEjectISO, "%s of %s: %v", op, rec.ISOPath, err)
	}
	p.requeueAfter(delay)
}

func backoffDelay(attempts int32) time.Duration {
	d := ejectBackoffBase
	for i := int32(1); i < attempts && d < ejectBackoffMax; i++ {
		d *= 2
	}
	if d > ejectBackoffMax {
		d = ejectBackoffMax
	}
	return d
}

// machineDeleting: no new ejection for a Machine already being deleted (or gone).
func (e *Ejector) machineDeleting(ctx context.Context, p *Pass) (string, bool, error) {
	name := p.VA.Status.VM.MachineName
	if name == "" {
		return "", false, nil
	}
	m := agents.New(agents.MachineGVK())
	if err := e.Reader.Get(ctx, types.NamespacedName{Namespace: p.Pool.Spec.ControlPlaneNamespace, Name: name}, m); err != nil {
		return name, true, nil // gone or unreadable: not a moment to start an ejection
	}
	return name, m.GetDeletionTimestamp() != nil, nil
}
