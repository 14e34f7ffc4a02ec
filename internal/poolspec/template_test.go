package poolspec_test

import (
	"reflect"
	"slices"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

func driftPool() *afv1.VsphereAgentPool {
	p := &afv1.VsphereAgentPool{}
	p.Spec.VSphere.Network, p.Spec.VSphere.Firmware = "VM Network", "efi"
	p.Spec.Template.NumCPUs, p.Spec.Template.MemoryMiB, p.Spec.Template.DiskGiB = 4, 16384, 120
	return p
}

// Every field of the VM spec the controller asks vCenter for is either part of the template's shape or
// named here as not shaping the VM: a new field must be classified, or drift would miss it.
func TestEveryVMSpecFieldIsClassified(t *testing.T) {
	shape := []string{"Network", "GuestID", "SCSIType", "Firmware", "NetworkAdapter", "NumCPUs", "MemoryMiB", "DiskGiB", "EagerlyScrub", "Hardware", "AdditionalNICs"}
	notShape := []string{"Name", "Datacenter", "DatastoreCluster", "ResourcePool", "Folder", "Tags", "ISOPath", "Ownership", "MACAddress", "New",
		"ClusterModule"} // placement: the anti-affinity group, joined later by a VM made without it
	typ := reflect.TypeFor[vsphere.VMSpec]()
	for i := range typ.NumField() {
		if f := typ.Field(i).Name; !slices.Contains(shape, f) && !slices.Contains(notShape, f) {
			t.Errorf("vsphere.VMSpec.%s is neither part of the template's shape (poolspec.TemplateShape) nor listed as not shaping the VM", f)
		}
	}
}

func TestTemplateShapeAndDiff(t *testing.T) {
	p := driftPool()
	old := poolspec.TemplateRecord(p, "")
	if old.Shape["memoryMiB"] != "16384" || old.Shape["network"] != "VM Network" || len(old.Hash) != 16 {
		t.Fatalf("record %+v", old)
	}
	if again := poolspec.TemplateRecord(p, ""); again.Hash != old.Hash {
		t.Fatal("the hash of one template differs between two computations")
	}

	p.Spec.Template.MemoryMiB = 32768
	p.Spec.Template.Hardware = &afv1.HardwareSpec{DataDisks: []afv1.DataDisk{{Name: "data", SizeGiB: 100}}}
	cur := poolspec.TemplateRecord(p, "")
	want := []string{"hardware.dataDisks[0].name (unset) -> data", "hardware.dataDisks[0].sizeGiB (unset) -> 100", "memoryMiB 16384 -> 32768"}
	if got := poolspec.ShapeDiff(old.Shape, cur.Shape); !slices.Equal(got, want) {
		t.Fatalf("diff %q, want %q", got, want)
	}
	if got := poolspec.ShortDiff(want, 2); got != "hardware.dataDisks[0].name (unset) -> data, hardware.dataDisks[0].sizeGiB (unset) -> 100 and 1 more" {
		t.Fatalf("short diff %q", got)
	}

	va := &afv1.VsphereAgent{}
	tpl := poolspec.NewTemplates(p)
	if d := tpl.Drift(va); d != nil {
		t.Fatalf("a VM without a record drifts: %q", d)
	}
	va.Status.VM.Template = old
	if d := tpl.Drift(va); !slices.Equal(d, want) {
		t.Fatalf("drift %q, want %q", d, want)
	}
	va.Status.VM.Template = cur
	if d := tpl.Drift(va); d != nil {
		t.Fatalf("a VM of the current template drifts: %q", d)
	}
	va.Status.VM.Template = &afv1.TemplateRecord{Hash: old.Hash} // a shape pruned by an older CRD
	if d := tpl.Drift(va); len(d) != 1 {
		t.Fatalf("a record without its shape: %q, want the hashes", d)
	}
}

// A failure domain's network is the VM's network: the shape follows the domain, and placement (folder,
// resource pool, datastore) is not part of it.
func TestTemplateShapeFollowsTheDomain(t *testing.T) {
	p := driftPool()
	p.Spec.VSphere.FailureDomains = []afv1.FailureDomain{{Name: "a", Network: "net-a"}, {Name: "b", ResourcePool: "rp-b"}}
	if a, b := poolspec.TemplateShape(p, "a"), poolspec.TemplateShape(p, "b"); a["network"] != "net-a" || b["network"] != "VM Network" {
		t.Fatalf("networks a %q, b %q", a["network"], b["network"])
	}
	before := poolspec.TemplateRecord(p, "b").Hash
	p.Spec.VSphere.Folder, p.Spec.VSphere.DatastoreCluster = "elsewhere", "other-ds"
	if poolspec.TemplateRecord(p, "b").Hash != before {
		t.Fatal("a placement change changed the template")
	}
}

// The hardware profile is shape as a whole (TemplateShape flattens spec.template.hardware): every field of
// vsphere.Hardware comes from it, PCI devices included, so a new one must be named here.
func TestEveryHardwareFieldIsShape(t *testing.T) {
	fromHardwareSpec := []string{"NumCoresPerSocket", "MemoryReservationMiB", "DataDisks", "StoragePolicyName", "NestedHV",
		"SecureBoot", "ExtraConfig", "PCIDevices"}
	typ := reflect.TypeFor[vsphere.Hardware]()
	for i := range typ.NumField() {
		if f := typ.Field(i).Name; !slices.Contains(fromHardwareSpec, f) {
			t.Errorf("vsphere.Hardware.%s is not known to come from spec.template.hardware (the template's shape)", f)
		}
	}
}

// Adding, changing or removing a PCI device or vGPU profile is template drift: the VM's devices differ.
func TestPCIDevicesAreShape(t *testing.T) {
	p := driftPool()
	old := poolspec.TemplateRecord(p, "")
	vendor, device := int32(4318), int32(7864)
	p.Spec.Template.Hardware = &afv1.HardwareSpec{PCIDevices: []afv1.PCIDeviceSpec{
		{VGPUProfile: "grid_t4-4q"}, {VendorID: &vendor, DeviceID: &device},
	}}
	cur := poolspec.TemplateRecord(p, "")
	want := []string{"hardware.pciDevices[0].vGPUProfile (unset) -> grid_t4-4q", "hardware.pciDevices[1].deviceId (unset) -> 7864",
		"hardware.pciDevices[1].vendorId (unset) -> 4318"}
	if got := poolspec.ShapeDiff(old.Shape, cur.Shape); !slices.Equal(got, want) {
		t.Fatalf("diff %q, want %q", got, want)
	}
	p.Spec.Template.Hardware.PCIDevices[0].VGPUProfile = "grid_t4-8q"
	if got := poolspec.ShapeDiff(cur.Shape, poolspec.TemplateRecord(p, "").Shape); !slices.Equal(got, []string{"hardware.pciDevices[0].vGPUProfile grid_t4-4q -> grid_t4-8q"}) {
		t.Fatalf("another profile: %q", got)
	}
}

// The NICs after the first are the VM's shape: adding one, or moving it to another network, is drift;
// their IPAM pools are not (they are the image's network configuration).
func TestTemplateShapeCountsAdditionalNetworks(t *testing.T) {
	p := driftPool()
	old := poolspec.TemplateShape(p, "")
	p.Spec.VSphere.AdditionalNetworks = []afv1.AdditionalNetwork{{Network: "storage", AdapterType: "e1000e"}}
	cur := poolspec.TemplateShape(p, "")
	if got := poolspec.ShapeDiff(old, cur); !reflect.DeepEqual(got, []string{
		"additionalNetworks[0].adapterType (unset) -> e1000e", "additionalNetworks[0].network (unset) -> storage"}) {
		t.Fatalf("diff %q", got)
	}
	p.Spec.VSphere.AdditionalNetworks[0].AddressesFromPools = []afv1.IPPoolReference{{APIGroup: "ipam.cluster.x-k8s.io", Kind: "InClusterIPPool", Name: "storage-v4"}}
	if again := poolspec.TemplateShape(p, ""); poolspec.TemplateHash(again) != poolspec.TemplateHash(cur) {
		t.Fatal("an IPAM pool of a NIC changed the VM's shape")
	}
	p.Spec.VSphere.NetworkAdapterType = "vmxnet3"
	p.Spec.VSphere.AdditionalNetworks = append(p.Spec.VSphere.AdditionalNetworks, afv1.AdditionalNetwork{Network: "backup"})
	if nics := poolspec.AdditionalNICs(p); !reflect.DeepEqual(nics, []vsphere.NIC{{Network: "storage", Adapter: "e1000e"}, {Network: "backup", Adapter: "vmxnet3"}}) {
		t.Fatalf("NICs %+v", nics)
	}
}
