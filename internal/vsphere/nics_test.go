package vsphere_test

import (
	"testing"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// A VM with several NICs gets them in order, each on its network with its model and (when given) its
// manual MAC; the VM's MACs are read back in that order.
func TestCreateVMWithSeveralNICs(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	h.uploadISO(t, isoPath)
	spec := h.env.VMSpec("hc1-worker-nics", newOwner())
	spec.ISOPath = isoPath
	spec.MACAddress = "00:50:56:01:02:03"
	spec.AdditionalNICs = []vsphere.NIC{
		{Network: "VM Network", Adapter: "e1000e", MACAddress: "00:50:56:0A:0B:0C"},
		{Network: vcsim.Network}, // DHCP: vCenter picks its MAC
	}
	info, err := h.client.CreateVM(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.MACAddresses) != 3 || info.MACAddresses[0] != "00:50:56:01:02:03" || info.MACAddresses[1] != "00:50:56:0a:0b:0c" ||
		info.MACAddresses[2] == "" || info.MACAddress != info.MACAddresses[0] {
		t.Fatalf("MACs read back: %q (first %q)", info.MACAddresses, info.MACAddress)
	}

	admin := adminClient(t, h)
	vmObj, err := find.NewFinder(admin, false).VirtualMachine(ctx, "/DC0/vm/"+vcsim.Folder+"/hc1-worker-nics")
	if err != nil {
		t.Fatal(err)
	}
	var vm mo.VirtualMachine
	if err := vmObj.Properties(ctx, vmObj.Reference(), []string{"config.hardware.device"}, &vm); err != nil {
		t.Fatal(err)
	}
	devices := object.VirtualDeviceList(vm.Config.Hardware.Device)
	var got []string
	for _, d := range devices.SelectByType((*types.VirtualEthernetCard)(nil)) {
		card := d.(types.BaseVirtualEthernetCard).GetVirtualEthernetCard()
		model := "vmxnet3"
		if _, ok := d.(*types.VirtualE1000e); ok {
			model = "e1000e"
		}
		got = append(got, devices.Name(d)+" "+model+" "+card.MacAddress+" "+card.AddressType+" "+networkOf(t, h, card))
	}
	want := []string{
		"ethernet-0 vmxnet3 00:50:56:01:02:03 manual " + vcsim.Network,
		"ethernet-1 e1000e 00:50:56:0a:0b:0c manual VM Network",
	}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("NICs in vCenter:\n%q\nwant the first two as\n%q", got, want)
	}
}

// networkOf names the network a NIC is backed by (a port group or a standard network).
func networkOf(t *testing.T, h *harness, card *types.VirtualEthernetCard) string {
	t.Helper()
	ctx := testContext(t)
	var ref types.ManagedObjectReference
	switch b := card.Backing.(type) {
	case *types.VirtualEthernetCardNetworkBackingInfo:
		return b.DeviceName
	case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
		ref = types.ManagedObjectReference{Type: "DistributedVirtualPortgroup", Value: b.Port.PortgroupKey}
	default:
		return "?"
	}
	var pg mo.DistributedVirtualPortgroup
	if err := object.NewCommon(adminClient(t, h), ref).Properties(ctx, ref, []string{"name"}, &pg); err != nil {
		t.Fatal(err)
	}
	return pg.Name
}
