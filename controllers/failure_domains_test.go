package controllers

import (
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/shared"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestPoolDomains(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Spec.HostedClusterRef.Name = "hc"
	pool.Spec.VSphere = afv1.VSphereSpec{Datacenter: "DC", DatastoreCluster: "pod", ResourcePool: "C0/Resources", Network: "net"}
	if got := poolDomains(pool); !reflect.DeepEqual(got, []domainPlacement{{ResourcePool: "C0/Resources", DatastoreCluster: "pod", Network: "net", Folder: "hc"}}) {
		t.Fatalf("no failure domains: %+v", got)
	}
	three := int32(3)
	pool.Spec.VSphere.FailureDomains = []afv1.FailureDomain{
		{Name: "a", Region: "eu", ComputeCluster: "C1", Datastore: "ds1", MaxVMs: &three},
		{Name: "b", ResourcePool: "C2/Resources/rp", Network: "net2", Folder: "f/b"},
		{Name: "c"},
	}
	want := []domainPlacement{
		{Name: "a", Region: "eu", ResourcePool: "C1/Resources", DatastoreCluster: "ds1", Network: "net", Folder: "hc", MaxVMs: &three},
		{Name: "b", ResourcePool: "C2/Resources/rp", DatastoreCluster: "pod", Network: "net2", Folder: "f/b"},
		{Name: "c", ResourcePool: "C0/Resources", DatastoreCluster: "pod", Network: "net", Folder: "hc"},
	}
	if got := poolDomains(pool); !reflect.DeepEqual(got, want) {
		t.Fatalf("poolDomains =\n%+v\nwant\n%+v", got, want)
	}
	if _, ok := domainOf(pool, "zz"); ok {
		t.Fatal("a removed domain must not resolve")
	}
	if got := topologyLabels(pool, "a"); !reflect.DeepEqual(got, map[string]string{afv1.LabelTopologyZone: "a", afv1.LabelTopologyRegion: "eu"}) {
		t.Fatalf("topologyLabels(a) = %v", got)
	}
	if got := topologyLabels(pool, "b"); !reflect.DeepEqual(got, map[string]string{afv1.LabelTopologyZone: "b"}) {
		t.Fatalf("topologyLabels(b) = %v", got)
	}
	if got := topologyLabels(pool, ""); got != nil {
		t.Fatalf("no domain, no labels: %v", got)
	}
	a := &agents.Agent{NodeLabels: map[string]string{afv1.LabelTopologyZone: "a", "user": "x"}}
	if got := missingNodeLabels(a, topologyLabels(pool, "a")); !reflect.DeepEqual(got, map[string]any{afv1.LabelTopologyRegion: "eu"}) {
		t.Fatalf("missingNodeLabels = %v", got)
	}
}

func TestCreationFailedCountsDomainFaults(t *testing.T) {
	cases := []struct {
		phase  afv1.VMPhase
		reason string
		want   bool
	}{
		{afv1.VMPhasePending, afv1.ReasonVMCreateFailed, true},
		{afv1.VMPhasePending, shared.ReasonWaitingForISO, false},
		{afv1.VMPhasePending, shared.ReasonWaitingForCredentials, false},
		{afv1.VMPhaseFailed, afv1.ReasonInvalidPlacement, true},
		{afv1.VMPhaseFailed, shared.ReasonRegistrationTimeout, true},
		{afv1.VMPhaseFailed, afv1.ReasonDuplicateName, false},
		{afv1.VMPhaseProvisioning, shared.ReasonAwaitingRegistration, false},
	}
	for _, tc := range cases {
		va := &afv1.VsphereAgent{}
		va.Status.VM.Phase, va.Status.VM.Reason = tc.phase, tc.reason
		if got := creationFailed(va); got != tc.want {
			t.Errorf("creationFailed(%s/%s) = %t, want %t", tc.phase, tc.reason, got, tc.want)
		}
	}
}

func TestVMNeedCountsThickDisksAndReservation(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 4, MemoryMiB: 16384, DiskGiB: 100}
	if got := vmNeed(pool); got != (vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16384}) {
		t.Fatalf("thin boot disk: %+v", got)
	}
	pool.Spec.VSphere.DiskEagerlyScrub = true
	res := int64(8192)
	pool.Spec.Template.Hardware = &afv1.HardwareSpec{MemoryReservationMiB: &res, DataDisks: []afv1.DataDisk{
		{Name: "a", SizeGiB: 50, ProvisioningMode: afv1.ProvisioningThick},
		{Name: "b", SizeGiB: 30, ProvisioningMode: afv1.ProvisioningEagerlyZeroed},
		{Name: "c", SizeGiB: 70, ProvisioningMode: afv1.ProvisioningThin},
		{Name: "d", SizeGiB: 90, ProvisioningMode: afv1.ProvisioningThick, Datastore: "elsewhere"},
	}}
	if got := vmNeed(pool); got != (vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16384, MemoryReservationMiB: 8192, ThickDiskGiB: 180}) {
		t.Fatalf("thick boot disk, thick data disks on the boot datastore, reservation: %+v", got)
	}
}

func TestHeadroomSeriesOfARemovedDomainGo(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Namespace, pool.Name = "ns-meter", "p"
	var tr domainTracker
	metrics.PoolHeadroom.WithLabelValues("ns-meter", "p", "a").Set(3)
	metrics.PoolHeadroom.WithLabelValues("ns-meter", "p", "b").Set(4)
	tr.meter(pool, "ns-meter/p", map[string]bool{"a": true, "b": true})
	tr.meter(pool, "ns-meter/p", map[string]bool{"a": true})
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
