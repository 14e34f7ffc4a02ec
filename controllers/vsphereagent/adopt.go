package vsphereagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// adoptionRecheck is how often disagreeing evidence is looked at again (it is read-only).
const adoptionRecheck = 5 * time.Minute

// reconcileUpstream handles a VsphereAgent the upstream operator made whose VM is not adopted yet. It
// returns done=true when the pass ends here; false once the VM was adopted this pass, so the ordinary
// phases run on it. Before adoption nothing is written anywhere but this object's status and Events.
func (r *Reconciler) reconcileUpstream(ctx context.Context, s *vmScope) (done bool, err error) {
	va, pool := s.va, s.pool
	report := func(reason, msg, eventType string) (bool, error) {
		if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAdopted); c == nil || c.Reason != reason || c.Message != msg {
			r.Recorder.Eventf(va, nil, eventType, reason, events.ActionAdoptVM, "%s", msg)
		}
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAdopted, false, reason, msg, va.Generation)
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, reason, msg, va.Generation)
		return true, nil
	}
	vmName := upstreamVMName(va)
	switch {
	case !va.DeletionTimestamp.IsZero():
		return report(afv1.ReasonUpstreamNotAdopted, fmt.Sprintf("upstream VsphereAgent deleted before its VM %s was adopted: ownership not proven, no VM destroyed, no Agent unapproved or deleted; remove finalizer %s by hand once the VM is dealt with", vmName, afv1.FinalizerUpstreamVsphereAgent), "Warning")
	case pool == nil:
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonPoolNotFound, "VsphereAgentPool "+va.Spec.PoolRef.Name+" not found", va.Generation)
		return true, nil
	case va.Labels[afv1.LabelUpstreamCreatedFor] == afv1.UpstreamCreatedForAdopted || va.Status.VM.Source == afv1.UpstreamSourceDiscovered:
		return report(afv1.ReasonUpstreamDiscoveredAgent, fmt.Sprintf("the upstream operator discovered this Agent (VM %s) rather than creating its VM: reported, never adopted or destroyed", vmName), "Warning")
	case pool.Spec.Adoption != afv1.AdoptionEnabled:
		return report(afv1.ReasonAdoptionDisabled, fmt.Sprintf("VM %s was made by the upstream operator; set spec.adoption: Enabled on pool %s to take it over", vmName, pool.Name), "Normal")
	case pool.Spec.Paused:
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonPaused, "the pool is paused", va.Generation)
		return true, nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return true, err
	}
	dc := poolspec.DatacenterOf(va, pool)
	cand, agent, mismatches, err := r.adoptionEvidence(ctx, vs, s, dc, vmName)
	if err != nil {
		return true, err
	}
	if len(mismatches) > 0 {
		s.requeueAfter(adoptionRecheck)
		return report(afv1.ReasonAdoptionEvidenceMismatch, fmt.Sprintf("VM %s not adopted, nothing changed: %s", vmName, strings.Join(mismatches, "; ")), "Warning")
	}
	// Our finalizer first: from the reconfigure on, this VsphereAgent's deletion must clean up the VM.
	if controllerutil.AddFinalizer(va, afv1.FinalizerVsphereAgent) {
		replaced := va.ResourceVersion
		if err := r.Update(ctx, va); err != nil {
			return true, err
		}
		r.own.Wrote(replaced, va)
	}
	info, err := vs.AdoptVM(ctx, dc, cand.Ref, cand.BIOSUUID, poolspec.Ownership(va, pool))
	if err != nil {
		if vsphere.ClassOf(err) == vsphere.ClassOwnership {
			return report(afv1.ReasonAdoptionEvidenceMismatch, fmt.Sprintf("VM %s not adopted, nothing changed: %v", vmName, err), "Warning")
		}
		return true, err
	}
	r.recordAdoption(s, dc, cand, info, agent)
	// Upstream's finalizer goes only now that ours guards the VM; our pool label makes it the pool's.
	replaced := va.ResourceVersion
	controllerutil.RemoveFinalizer(va, afv1.FinalizerUpstreamVsphereAgent)
	if va.Labels == nil {
		va.Labels = map[string]string{}
	}
	va.Labels[afv1.LabelPool] = pool.Name
	status := va.Status.DeepCopy()
	if err := r.Update(ctx, va); err != nil {
		return true, err
	}
	va.Status = *status // the Update returns the stored status, which lacks this pass's record
	r.own.Wrote(replaced, va)
	return false, nil
}

// recordAdoption writes our status shape for the adopted VM, with the Adopted condition and Event.
func (r *Reconciler) recordAdoption(s *vmScope, dc string, cand *vsphere.AdoptionCandidate, info *vsphere.VMInfo, agent *agents.Agent) {
	va, pool := s.va, s.pool
	now := metav1.NewTime(r.Opts.Clock.Now())
	vm := &va.Status.VM
	vm.Name, vm.InstanceUUID, vm.BIOSUUID = info.Name, info.InstanceUUID, info.BIOSUUID
	vm.MACAddress, vm.Datacenter, vm.ISOPath = agents.NormalizeMAC(info.MACAddress), dc, ""
	for _, cd := range info.CDROMs {
		if cd.ISOPath != "" {
			vm.ISOPath = cd.ISOPath
		}
	}
	if cur := pool.Status.ISO; cur != nil && cur.Path != "" && vm.ISOPath == cur.Path && cur.SourceCreatedTime != nil {
		vm.ImageCreatedTime = cur.SourceCreatedTime.DeepCopy() // it boots the pool's current image
	}
	if vm.CreatedAt == nil {
		vm.CreatedAt = &now
	}
	agentMsg := "no Agent registered yet"
	if agent != nil {
		vm.AgentName, agentMsg = agent.Name, "Agent "+agent.Name
	}
	if vm.Phase == "" || vm.Phase == afv1.VMPhaseOrphaned {
		r.setPhase(va, afv1.VMPhaseProvisioning, afv1.ReasonAwaitingRegistration)
	}
	marker := "1.0.x VM without Notes marker, this pool's ISO in its drive"
	if len(notesMarkerUIDs(cand.Notes)) > 0 {
		marker = "Notes marker names this VsphereAgent"
	}
	msg := fmt.Sprintf("adopted VM %s (BIOS UUID %s, MAC %s, folder %s, %s; %s): instance UUID set to %s and ownership marker added",
		info.Name, info.BIOSUUID, vm.MACAddress, cand.Folder, marker, agentMsg, info.InstanceUUID)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAdopted, true, afv1.ReasonAdoptionSucceeded, msg, va.Generation)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, true, afv1.ReasonAdoptionSucceeded, "VM "+info.Name+" adopted from the upstream operator", va.Generation)
	r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonAdoptionSucceeded, events.ActionAdoptVM, "%s", msg)
}

// upstreamVMName is the VM name upstream recorded in the vm-name annotation (the AgentMachine name).
// Never status.vm.name: a writer of the status subresource could point adoption at any VM.
func upstreamVMName(va *afv1.VsphereAgent) string {
	return va.Annotations[afv1.AnnotationUpstreamVMName]
}
