package controllers

import (
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
	ReasonVMNotFound            = "VMNotFound"
	ReasonAgentRegistered       = "AgentRegistered"
	ReasonAwaitingRegistration  = "AwaitingRegistration"
	ReasonAgentPrepared         = "AgentPrepared"
	ReasonAgentBound            = "AgentBound"
	ReasonAgentUnbound          = "AgentUnbound"
	ReasonAgentMissing          = "AgentMissing"
	ReasonPoolNotFound          = "PoolNotFound"
	ReasonAmbiguousAgent        = "AmbiguousAgent"
)

// setCondition sets a condition; LastTransitionTime only moves when the status changes, so a
// no-change pass leaves status byte-identical (and unwritten).
func setCondition(conds *[]metav1.Condition, condType string, ok bool, reason, message string, generation int64) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}

func findCondition(conds []metav1.Condition, condType string) *metav1.Condition {
	return meta.FindStatusCondition(conds, condType)
}
