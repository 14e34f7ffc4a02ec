package ejection

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// An armed record (SPEC §6 "record first", written ahead): the status write that makes the VM Bound
// also carries the record of the ejection to come, so the ejection starts at Installed=True with no
// write of its own before the disconnect, and only its result is written (one status write per VM
// less). The CD-ROM comes from the VM read that creating it already did (SawVM); after a restart the
// record is armed from the VM's next liveness look-up (observeVM), and a VM not read in this process
// yet is recorded at Installed=True as before. The start still verifies the VM
// (ownership, BIOS UUID, the device backed by exactly the recorded ISO) before touching it.

// SawVM remembers the CD-ROMs of a VM the VsphereAgent's pass read anyway (creating it, or its liveness
// look-up), to arm its ejection when it is bound without a look-up of its own. Only for pools that eject.
func (e *Ejector) SawVM(uid types.UID, pool *afv1.VsphereAgentPool, info *vsphere.VMInfo) {
	if info == nil || pool == nil || !pool.Spec.ISO.EjectAfterInstall {
		return
	}
	e.media.Store(uid, append([]vsphere.CDROM(nil), info.CDROMs...))
}

// started reports whether an armed record's ejection began in this process without the record saying
// so yet (its reconfigure seen once, not yet written: stepEjection's first sight).
func (e *Ejector) started(uid types.UID) bool {
	_, ok := e.tasks.Load(uid)
	return ok
}

// arm writes the record of the ejection to come into the pass's status while the VM is bound and its
// Agent not yet installed, from the VM's CD-ROMs as last read (SawVM). Nothing happens when it cannot
// (CRD outdated, Machine being deleted, VM not read yet, no CD-ROM of ours): the unarmed path records
// the ejection at Installed=True.
func (e *Ejector) arm(ctx context.Context, p *Pass) error {
	va := p.VA
	if ok, _ := e.Guard.Supported(ctx); !ok {
		return nil
	}
	if _, deleting, err := e.machineDeleting(ctx, p); err != nil || deleting {
		return err
	}
	v, ok := e.media.Load(va.UID)
	if !ok {
		return nil // not read in this process yet: the next liveness look-up is
	}
	info := &vsphere.VMInfo{CDROMs: v.([]vsphere.CDROM)}
	dc := poolspec.DatacenterOf(va, p.Pool)
	ours, _ := e.classifyMedia(p, info)
	if len(ours) == 0 {
		return nil
	}
	e.media.Delete(va.UID)
	va.Status.ISOEjection = &afv1.ISOEjectionRecord{
		InstanceUUID: va.Status.VM.InstanceUUID, BIOSUUID: va.Status.VM.BIOSUUID, OwnerUID: string(va.UID),
		Datacenter: dc, DeviceKey: ours[0].Key, ISOPath: ours[0].ISOPath, AgentUID: string(p.Agent.UID),
		StartedAt: metav1.NewTime(e.Clock.Now()), Armed: true,
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonWaitingForInstallation, armedMessage(va), va.Generation)
	return nil
}

// armedMessage is the ISOEjected message of an armed record; it names no Agent condition, so the
// Agent's installation steps do not rewrite the status.
func armedMessage(va *afv1.VsphereAgent) string {
	rec := va.Status.ISOEjection
	return fmt.Sprintf("ejection of %s (CD-ROM %d) recorded; it starts when Agent %s reports Installed=True", rec.ISOPath, rec.DeviceKey, va.Status.VM.AgentName)
}

// stepArmed handles an armed record that has not started: it waits for Installed=True, is dropped
// (nothing was touched) when the feature is disabled, the VM gone or released or its Machine being deleted,
// and otherwise starts the ejection from the record.
func (e *Ejector) stepArmed(ctx context.Context, p *Pass) error {
	va, rec := p.VA, p.VA.Status.ISOEjection
	switch {
	case !ejects(p):
		e.dropArmed(p, "spec.iso.ejectAfterInstall is false; the ejection recorded when the VM was bound never started and was dropped (nothing was touched)")
		return nil
	case vmGone(va):
		e.dropArmed(p, "not started: the VM no longer exists in vCenter; the ejection recorded when it was bound was dropped")
		return nil
	case va.Status.VM.Phase == afv1.VMPhaseReleased:
		e.dropArmed(p, "not started: the VM is released (scale-down); the ejection recorded when it was bound was dropped, its cleanup follows")
		return nil
	case p.Agent != nil && rec.AgentUID != "" && string(p.Agent.UID) != rec.AgentUID:
		return e.stepEjection(ctx, p) // refuses: the Agent was replaced
	case p.Agent == nil || (!p.Agent.IsInstalled() && !recovering(p)) || va.Status.VM.Phase != afv1.VMPhaseBound:
		if rec.LastError == "" { // a refusal keeps saying why
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonWaitingForInstallation, armedMessage(va), va.Generation)
		}
		return nil
	}
	if m, deleting, err := e.machineDeleting(ctx, p); err != nil {
		return err
	} else if deleting {
		e.dropArmed(p, "not started: Machine "+m+" is being deleted (scale-down); the ejection recorded when it was bound was dropped")
		return nil
	}
	return e.stepEjection(ctx, p)
}

// vmGone reports whether this pass's look-up (observeVM, before the ejection) found the VM gone.
func vmGone(va *afv1.VsphereAgent) bool {
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionVMHealthy)
	return c != nil && c.Reason == afv1.ReasonVMNotFound
}

func (e *Ejector) dropArmed(p *Pass, msg string) {
	va := p.VA
	va.Status.ISOEjection = nil
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonDisabled, msg, va.Generation)
}
