package poolspec

import (
	"reflect"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func TestPoolDomains(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Spec.HostedClusterRef.Name = "hc"
	pool.Spec.VSphere = afv1.VSphereSpec{Datacenter: "DC", DatastoreCluster: "pod", ResourcePool: "C0/Resources", Network: "net"}
	if got := Domains(pool); !reflect.DeepEqual(got, []Placement{{ResourcePool: "C0/Resources", DatastoreCluster: "pod", Network: "net", Folder: "hc"}}) {
		t.Fatalf("no failure domains: %+v", got)
	}
	three := int32(3)
	pool.Spec.VSphere.FailureDomains = []afv1.FailureDomain{
		{Name: "a", Region: "eu", ComputeCluster: "C1", Datastore: "ds1", MaxVMs: &three},
		{Name: "b", ResourcePool: "C2/Resources/rp", Network: "net2", Folder: "f/b"},
		{Name: "c"},
	}
	want := []Placement{
		{Name: "a", Region: "eu", ResourcePool: "C1/Resources", DatastoreCluster: "ds1", Network: "net", Folder: "hc", MaxVMs: &three},
		{Name: "b", ResourcePool: "C2/Resources/rp", DatastoreCluster: "pod", Network: "net2", Folder: "f/b"},
		{Name: "c", ResourcePool: "C0/Resources", DatastoreCluster: "pod", Network: "net", Folder: "hc"},
	}
	if got := Domains(pool); !reflect.DeepEqual(got, want) {
		t.Fatalf("Domains =\n%+v\nwant\n%+v", got, want)
	}
	if _, ok := DomainOf(pool, "zz"); ok {
		t.Fatal("a removed domain must not resolve")
	}
	if got := TopologyLabels(pool, "a"); !reflect.DeepEqual(got, map[string]string{afv1.LabelTopologyZone: "a", afv1.LabelTopologyRegion: "eu"}) {
		t.Fatalf("TopologyLabels(a) = %v", got)
	}
	if got := TopologyLabels(pool, "b"); !reflect.DeepEqual(got, map[string]string{afv1.LabelTopologyZone: "b"}) {
		t.Fatalf("TopologyLabels(b) = %v", got)
	}
	if got := TopologyLabels(pool, ""); got != nil {
		t.Fatalf("no domain, no labels: %v", got)
	}
}

func TestVMNeedCountsThickDisksAndReservation(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Spec.Template = afv1.VMTemplateSpec{NumCPUs: 4, MemoryMiB: 16384, DiskGiB: 100}
	if got := VMNeed(pool); got != (vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16384}) {
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
	if got := VMNeed(pool); got != (vsphere.VMNeed{NumCPUs: 4, MemoryMiB: 16384, MemoryReservationMiB: 8192, ThickDiskGiB: 180}) {
		t.Fatalf("thick boot disk, thick data disks on the boot datastore, reservation: %+v", got)
	}
}
