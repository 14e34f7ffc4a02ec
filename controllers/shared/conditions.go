package shared

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// Reasons shared by the controllers.
const (
	ReasonReady                 = "Ready"
	ReasonPaused                = "Paused"
	ReasonClaimed               = "Claimed"
	ReasonNodePoolClaimed       = "NodePoolAlreadyClaimed"
	ReasonDemandObserved        = "DemandObserved"
	ReasonInfraEnvReady         = "ISOURLAvailable"
	ReasonInfraEnvMissing       = "InfraEnvNotFound"
	ReasonRegistrationHealthy   = "RegistrationHealthy"
	ReasonRegistrationFailing   = planner.ReasonRegistrationFailing
	ReasonRegistrationTimeout   = planner.ReasonRegistrationTimeout
	ReasonProvisioning          = "ProvisioningInProgress"
	ReasonCapacitySatisfied     = "CapacitySatisfied"
	ReasonWaitingForISO         = "WaitingForISO"
	ReasonWaitingForCredentials = "WaitingForVSphere"
	ReasonVMCreated             = "VMCreated"
	ReasonAgentRegistered       = "AgentRegistered"
	ReasonAwaitingRegistration  = "AwaitingRegistration"
	ReasonAgentPrepared         = "AgentPrepared"
	ReasonAgentBound            = "AgentBound"
	ReasonAgentUnbound          = "AgentUnbound"
	ReasonAgentMissing          = "AgentMissing"
	// VMHealthy reasons: what vCenter shows of a created VM (it is looked up by instance UUID).
	ReasonVMRunning         = "VMRunning"
	ReasonVMRenamed         = "VMRenamed"
	ReasonVMMoved           = "VMMoved"
	ReasonVMPoweredOff      = "VMPoweredOff"
	ReasonVMPoweredOn       = "VMPoweredOn"
	ReasonVMNotFound        = planner.ReasonVMNotFound
	ReasonVMIdentityChanged = "VMIdentityChanged"
	// ReasonUnbindingPendingUserAction: the VM's Agent was unbound after installation and awaits a
	// reboot of its host into discovery (assisted-service unbinding-pending-user-action); the VM is
	// Released, destroyed once no Machine references it, and replaced only if demand needs one.
	ReasonUnbindingPendingUserAction = "UnbindingPendingUserAction" // = agents.ReasonUnbindingPendingUserAction
	ReasonPoolNotFound               = "PoolNotFound"
	// ReasonFailureDomainNotFound says a VsphereAgent's failure domain was removed from the pool before
	// its VM was created (the pool releases it).
	ReasonFailureDomainNotFound = planner.ReasonFailureDomainNotFound
)

// SetCondition sets a condition; LastTransitionTime only moves when the status changes, so a
// no-change pass leaves status byte-identical (and unwritten).
func SetCondition(conds *[]metav1.Condition, condType string, ok bool, reason, message string, generation int64) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: RedactText(message), ObservedGeneration: generation,
	})
}

// StampTransitions gives every condition whose status changed during a pass (or that is new) the injected
// clock's time as lastTransitionTime: SetCondition (meta.SetStatusCondition) stamps the wall clock, and
// condition times must agree with Options.Clock like every other time the operator writes or compares
// (the registration breaker compares AgentRegistered's time with the VM's failure time).
func StampTransitions(before, after []metav1.Condition, now time.Time) {
	t := metav1.NewTime(now)
	for i := range after {
		if b := FindCondition(before, after[i].Type); b == nil || b.Status != after[i].Status {
			after[i].LastTransitionTime = t
		}
	}
}

// FindCondition returns the condition of that type (nil: none).
func FindCondition(conds []metav1.Condition, condType string) *metav1.Condition {
	return meta.FindStatusCondition(conds, condType)
}
