package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/containeroo/agent-forge-operator/internal/redact"
)

// SetCondition sets a condition; LastTransitionTime only moves when the status changes, so a
// no-change pass leaves status byte-identical (and unwritten).
func SetCondition(conds *[]metav1.Condition, condType string, ok bool, reason, message string, generation int64) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: redact.String(message), ObservedGeneration: generation,
	})
}

// StampTransitions gives every condition whose status changed during a pass (or that is new) the injected
// clock's time as lastTransitionTime: SetCondition (meta.SetStatusCondition) stamps the wall clock, and
// condition times must agree with the controllers' Options.Clock like every other time the operator writes or compares
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

// SetUnknown sets a condition to Unknown (a verdict not reached yet), as SetCondition does otherwise.
func SetUnknown(conds *[]metav1.Condition, condType, reason, message string, generation int64) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: metav1.ConditionUnknown, Reason: reason, Message: redact.String(message), ObservedGeneration: generation,
	})
}
