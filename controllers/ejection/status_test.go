package ejection

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// TestSummaryCountsArmedRecordsAsWaiting: a record written ahead at Bound waits for the installation;
// the pool counts it as waiting, not in progress (also while its first step runs unwritten), unless
// it was refused.
func TestSummaryCountsArmedRecordsAsWaiting(t *testing.T) {
	va := func(reason string, rec *afv1.ISOEjectionRecord) afv1.VsphereAgent {
		v := afv1.VsphereAgent{}
		v.Status.Conditions = []metav1.Condition{{Type: afv1.ConditionISOEjected, Status: metav1.ConditionFalse, Reason: reason}}
		v.Status.ISOEjection = rec
		return v
	}
	armed := &afv1.ISOEjectionRecord{Armed: true}
	got := Summary([]afv1.VsphereAgent{
		va(afv1.ReasonWaitingForInstallation, armed),
		va(afv1.ReasonEjectionInProgress, armed),
		va(afv1.ReasonEjectionFailed, armed),
		va(afv1.ReasonEjectionInProgress, &afv1.ISOEjectionRecord{}),
	})
	want := afv1.ISOEjectionSummary{Waiting: 2, Failed: 1, InProgress: 1}
	if got == nil || *got != want {
		t.Errorf("summary %+v, want %+v", got, want)
	}
}
