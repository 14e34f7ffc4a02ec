package pool

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
)

func TestStatusBatchWritesConditionChangesAtOnceAndBatchesCounters(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, msg string, vms int32) *afv1.VsphereAgentPoolStatus {
		return &afv1.VsphereAgentPoolStatus{VMs: vms, Conditions: []metav1.Condition{{Type: afv1.ConditionReady, Status: status, Reason: reason, Message: msg}}}
	}
	before := ready(metav1.ConditionTrue, "Ready", "2 VMs", 2)
	capacity := func(status metav1.ConditionStatus, reason string) *afv1.VsphereAgentPoolStatus {
		st := ready(metav1.ConditionTrue, "Ready", "2 VMs", 2)
		st.Conditions = append(st.Conditions, metav1.Condition{Type: afv1.ConditionCapacitySatisfied, Status: status, Reason: reason, Message: reason})
		return st
	}
	cases := []struct {
		name      string
		after     *afv1.VsphereAgentPoolStatus
		wantBatch bool
	}{
		{"a condition's reason changes: written at once", ready(metav1.ConditionTrue, "Other", "2 VMs", 2), false},
		{"a condition's status changes: written at once", ready(metav1.ConditionFalse, "Ready", "2 VMs", 2), false},
		{"only a counter and a message move: batched", ready(metav1.ConditionTrue, "Ready", "3 VMs", 3), true},
		{"CapacitySatisfied=False moves between Deficit and ProvisioningInProgress: batched",
			capacity(metav1.ConditionFalse, afv1.ReasonProvisioningInProgress), true},
		{"CapacitySatisfied=False turns to a refusal: written at once", capacity(metav1.ConditionFalse, "InsufficientCapacity"), false},
		{"CapacitySatisfied turns True: written at once", capacity(metav1.ConditionTrue, afv1.ReasonCapacitySatisfied), false},
		{"only the ejection summary moves: batched", &afv1.VsphereAgentPoolStatus{VMs: 2, ISOEjections: &afv1.ISOEjectionSummary{Ejected: 1},
			Conditions: before.Conditions}, true},
	}
	for _, tc := range cases {
		r := &Reconciler{statusWrites: newDebouncer(clock.RealClock{}, time.Minute, time.Hour)}
		from := before
		if conditions.FindCondition(tc.after.Conditions, afv1.ConditionCapacitySatisfied) != nil {
			from = capacity(metav1.ConditionFalse, afv1.ReasonDeficit)
		}
		if got := r.statusBatch("ns/pool", from, tc.after); (got > 0) != tc.wantBatch {
			t.Errorf("%s: wait %s, batched want %t", tc.name, got, tc.wantBatch)
		}
	}
}
