package pool

import (
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

func TestCreationFailedCountsDomainFaults(t *testing.T) {
	cases := []struct {
		phase  afv1.VMPhase
		reason string
		want   bool
	}{
		{afv1.VMPhasePending, afv1.ReasonVMCreateFailed, true},
		{afv1.VMPhasePending, afv1.ReasonWaitingForISO, false},
		{afv1.VMPhasePending, afv1.ReasonWaitingForVSphere, false},
		{afv1.VMPhaseFailed, afv1.ReasonInvalidPlacement, true},
		{afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout, true},
		{afv1.VMPhaseFailed, afv1.ReasonDuplicateName, false},
		{afv1.VMPhaseProvisioning, afv1.ReasonAwaitingRegistration, false},
	}
	for _, tc := range cases {
		va := &afv1.VsphereAgent{}
		va.Status.VM.Phase, va.Status.VM.Reason = tc.phase, tc.reason
		if got := creationFailed(va); got != tc.want {
			t.Errorf("creationFailed(%s/%s) = %t, want %t", tc.phase, tc.reason, got, tc.want)
		}
	}
}

func TestHeadroomSeriesOfARemovedDomainGo(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Namespace, pool.Name = "ns-meter", "p"
	var tr domainTracker
	metrics.PoolHeadroom.WithLabelValues("ns-meter", "p", "a").Set(3)
	metrics.PoolHeadroom.WithLabelValues("ns-meter", "p", "b").Set(4)
	tr.meter(pool, "ns-meter/p", sets.New("a", "b"))
	tr.meter(pool, "ns-meter/p", sets.New("a"))
	ch := make(chan prometheus.Metric, 1024)
	metrics.PoolHeadroom.Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == metrics.LabelPoolNamespace && l.GetValue() == "ns-meter" {
				n++
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d headroom series left, want only domain a's", n)
	}
	metrics.PoolHeadroom.DeletePartialMatch(map[string]string{metrics.LabelPoolNamespace: "ns-meter"})
}

func TestDomainCountersAreBatched(t *testing.T) {
	three, four := int32(3), int32(4)
	before := &afv1.VsphereAgentPoolStatus{FailureDomains: []afv1.FailureDomainStatus{
		{Name: "a", VMs: 1, Available: true, Headroom: &three}, {Name: "b", VMs: 1, Available: true}}}
	after := &afv1.VsphereAgentPoolStatus{FailureDomains: []afv1.FailureDomainStatus{
		{Name: "a", VMs: 2, InFlight: 1, Available: true, Headroom: &four}, {Name: "b", Available: false, Reason: afv1.ReasonInsufficientCapacity}}}
	b := before.DeepCopy()
	batchDomainCounts(b, after)
	if !reflect.DeepEqual(b.FailureDomains[0], after.FailureDomains[0]) {
		t.Fatalf("counters of an unchanged domain are batched: %+v", b.FailureDomains[0])
	}
	if reflect.DeepEqual(b.FailureDomains[1], after.FailureDomains[1]) {
		t.Fatal("a domain that became unavailable must not be batched")
	}
}

func TestDomainCounts(t *testing.T) {
	gone := metav1.Now()
	va := func(phase afv1.VMPhase, reason string, deleting bool) *afv1.VsphereAgent {
		o := &afv1.VsphereAgent{}
		o.Status.VM.Phase, o.Status.VM.Reason = phase, reason
		if deleting {
			o.DeletionTimestamp = &gone
		}
		return o
	}
	tests := []struct {
		name          string
		vas           []*afv1.VsphereAgent
		vms, inFlight int
	}{
		{"in flight and available", []*afv1.VsphereAgent{va(afv1.VMPhaseProvisioning, "", false), va(afv1.VMPhaseAvailable, "", false)}, 2, 1},
		{"a VM being destroyed (destroy held) still counts, not in flight", []*afv1.VsphereAgent{va(afv1.VMPhaseDeleting, "Deleting", true), va(afv1.VMPhasePending, "", true)}, 2, 0},
		{"a failed VM recorded destroyed does not count", []*afv1.VsphereAgent{va(afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout, false)}, 0, 0},
		{"a failed VM not recorded gone counts", []*afv1.VsphereAgent{va(afv1.VMPhaseFailed, "Other", false)}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if vms, inFlight := domainCounts(tt.vas); vms != tt.vms || inFlight != tt.inFlight {
				t.Errorf("domainCounts = %d, %d; want %d, %d", vms, inFlight, tt.vms, tt.inFlight)
			}
		})
	}
}
