package planner

import (
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// VMLifecycle is where one of the pool's VMs stands, as far as capacity is concerned: one value, decided
// by Lifecycle from what was observed about the VM.
type VMLifecycle string

const (
	// VMInFlight means: created or being created (VsphereAgent phase empty, Pending or Provisioning); its Agent
	// has not registered or is not prepared yet. Supply that is on its way.
	VMInFlight VMLifecycle = "InFlight"
	// VMAvailable means: its Agent registered, was prepared and is free to bind.
	VMAvailable VMLifecycle = "Available"
	// VMInUse means: its Agent is bound or reserved, or a Machine references the VM. Never surplus.
	VMInUse VMLifecycle = "InUse"
	// VMReleased means: its Agent was unbound after use (scale-down); the VM is removed, never reused.
	VMReleased VMLifecycle = "Released"
	// VMReleasing means: already being released (deletion requested or under way).
	VMReleasing VMLifecycle = "Releasing"
	// VMFailed means: its VM could not be created or never registered; not capacity, replaced by the pool.
	VMFailed VMLifecycle = "Failed"
)

// VMObservation is what one pass observed about one VM (one VsphereAgent and its Agent).
type VMObservation struct {
	Name string
	// Phase and Reason are the VsphereAgent's status.vm.phase and status.vm.reason.
	Phase  afv1.VMPhase
	Reason string
	// Deleting: the VsphereAgent carries a deletion timestamp.
	Deleting bool
	// DeleteIssued: the pool deleted it and its cache has not shown the deletion yet (expectations).
	DeleteIssued bool
	// MachineRef: status.vm.machineRef names a Machine.
	MachineRef bool
	// AgentBound: the VM's Agent (found by the pool's labels) is bound or reserved by an AgentMachine.
	// The Agents are fresher than the VsphereAgent's status, which may not have caught up yet.
	AgentBound bool
	// CreatedAt is the VsphereAgent's creation time (orders surplus removal, newest first).
	CreatedAt time.Time
	// PhaseChangedAt is status.vm.lastTransitionTime: when a Failed VM failed (zero when unknown).
	PhaseChangedAt time.Time
	// RegisteredAt is when the VM last proved its host usable (zero when never): its AgentValidated
	// condition's move to True, or, for a VsphereAgent without that condition (written by an earlier
	// version), AgentRegistered's. A host that registers and then fails its validations is no success:
	// the registration breaker counts it as a failure.
	RegisteredAt time.Time
}

// Lifecycle decides the VM's one state. Precedence, first match wins:
//  1. deletion requested or under way: Releasing;
//  2. phase Failed: Failed (a failure stays one, whatever its Agent or Machine says);
//  3. its Agent is bound (the "Agent already bound" override): InUse, even when the status says
//     Released or has not caught up yet;
//  4. phase Released: Released (a machineRef left over from its use does not make it InUse);
//  5. phase Bound, or a machineRef: InUse;
//  6. phase Available: Available;
//  7. anything else (empty, Pending, Provisioning, or a phase this planner does not know): InFlight.
func Lifecycle(o VMObservation) VMLifecycle {
	switch {
	case o.Deleting || o.DeleteIssued:
		return VMReleasing
	case o.Phase == afv1.VMPhaseFailed:
		return VMFailed
	case o.AgentBound:
		return VMInUse
	case o.Phase == afv1.VMPhaseReleased:
		return VMReleased
	case o.Phase == afv1.VMPhaseBound || o.MachineRef:
		return VMInUse
	case o.Phase == afv1.VMPhaseAvailable:
		return VMAvailable
	}
	return VMInFlight
}

// MayHaveVM reports whether a VsphereAgent in this phase, with this reason, may have a VM in vCenter (or
// one being created), so it counts against limits.maxVMs whatever its lifecycle state: a VM whose destroy
// is held (a backup snapshot, a vCenter fault, a Machine still deleting) still exists. Only a Failed one
// whose reason records its VM as absent is free: destroyed before it failed (RegistrationTimeout), seen
// gone (VMNotFound), or never created as ours (a permanent create refusal).
func MayHaveVM(phase afv1.VMPhase, reason string) bool {
	if phase != afv1.VMPhaseFailed {
		return true
	}
	switch reason {
	case afv1.ReasonRegistrationTimeout, afv1.ReasonVMNotFound, afv1.ReasonDuplicateName, afv1.ReasonInvalidPlacement, afv1.ReasonOwnershipMismatch:
		return false
	}
	return true
}

// failedExpired reports whether a Failed VsphereAgent has been kept for longer than retention: it has
// served as evidence for the registration breaker and is deleted now (the pool replaced it long ago).
// One already being deleted, or whose failure time is unknown, is left alone.
func failedExpired(o VMObservation, now time.Time, retention time.Duration) bool {
	return o.Phase == afv1.VMPhaseFailed && !o.Deleting && !o.PhaseChangedAt.IsZero() && now.Sub(o.PhaseChangedAt) > retention
}

// CountsTowardsBreaker reports whether a Failed VM with this reason counts towards the breaker.
func CountsTowardsBreaker(reason string) bool {
	switch reason {
	case afv1.ReasonRegistrationTimeout, afv1.ReasonDuplicateName, afv1.ReasonInvalidPlacement, afv1.ReasonOwnershipMismatch,
		afv1.ReasonHostValidationFailed:
		return true
	}
	return false
}

// registrationFailing is the closed registration breaker's trip rule: at least threshold of the pool's
// VMs failed (with a reason that counts, see CountsTowardsBreaker) after the last time any of its VMs
// registered an Agent. What happens after a trip (the hold, its backoff, the probe) is stepBreaker's.
func registrationFailing(vms []VMObservation, threshold int) bool {
	return failuresAfter(vms, lastRegistration(vms)) >= threshold
}
