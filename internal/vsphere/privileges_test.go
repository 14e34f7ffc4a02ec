package vsphere_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// vmPrivileges are needed on the VM folder by every pool.
var vmPrivileges = []string{"VirtualMachine.Inventory.Create", "VirtualMachine.Inventory.Delete",
	"VirtualMachine.Config.AddNewDisk", "VirtualMachine.Config.AddRemoveDevice", "VirtualMachine.Config.AdvancedConfig",
	"VirtualMachine.Config.CPUCount", "VirtualMachine.Config.Memory", "VirtualMachine.Config.Settings", "VirtualMachine.Interact.PowerOn",
	"VirtualMachine.Interact.PowerOff"}

func TestRequiredPrivileges(t *testing.T) {
	with := func(extra ...string) []string { return append(append([]string(nil), vmPrivileges...), extra...) }
	fixed := map[string][]string{
		vsphere.PrivilegeResourcePool: {"Resource.AssignVMToPool"},
		vsphere.PrivilegeDatastore:    {"Datastore.AllocateSpace"},
		vsphere.PrivilegeISODatastore: {"Datastore.Browse", "Datastore.FileManagement"},
		vsphere.PrivilegeNetwork:      {"Network.Assign"},
	}
	cases := []struct {
		name         string
		spec         vsphere.PrivilegeSpec
		createFolder bool
		folder       []string
	}{
		{"plain pool, folder exists", vsphere.PrivilegeSpec{}, false, with()},
		{"folder created with the first VM", vsphere.PrivilegeSpec{}, true, append([]string{"Folder.Create"}, vmPrivileges...)},
		{"ISO ejection", vsphere.PrivilegeSpec{EjectAfterInstall: true}, false,
			with("VirtualMachine.Interact.SetCDMedia", "VirtualMachine.Interact.DeviceConnection", "VirtualMachine.Interact.AnswerQuestion")},
		{"recovery of a worker that booted discovery again", vsphere.PrivilegeSpec{RecoverDiscoveryBoot: true}, false,
			with("VirtualMachine.Interact.SetCDMedia", "VirtualMachine.Interact.DeviceConnection", "VirtualMachine.Interact.AnswerQuestion",
				"VirtualMachine.Interact.Reset")},
		{"PCI passthrough and vGPU devices: the full memory reservation", vsphere.PrivilegeSpec{PCIDevices: true}, false, with("VirtualMachine.Config.Resource")},
		{"tags", vsphere.PrivilegeSpec{PlacementSpec: vsphere.PlacementSpec{Tags: []string{"c/t"}}}, false,
			with("InventoryService.Tagging.ObjectAttachable")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := vsphere.RequiredPrivileges(tc.spec, tc.createFolder)
			want := map[string][]string{vsphere.PrivilegeFolder: tc.folder}
			for k, v := range fixed {
				want[k] = v
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("RequiredPrivileges:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// Anti-affinity adds the cluster-configuration privilege on the compute cluster, and the check names the
// cluster when it is withheld there.
func TestAntiAffinityPrivileges(t *testing.T) {
	got := vsphere.RequiredPrivileges(vsphere.PrivilegeSpec{AntiAffinity: true}, false)[vsphere.PrivilegeCluster]
	if !reflect.DeepEqual(got, []string{"Host.Inventory.EditCluster"}) {
		t.Fatalf("cluster privileges %v", got)
	}
	if _, ok := vsphere.RequiredPrivileges(vsphere.PrivilegeSpec{}, false)[vsphere.PrivilegeCluster]; ok {
		t.Fatal("a pool without anti-affinity is asked for a cluster privilege")
	}
	h := newHarness(t)
	ctx := testContext(t)
	spec := vsphere.PrivilegeSpec{PlacementSpec: vsphere.PlacementSpec{Datacenter: vcsim.Datacenter, DatastoreCluster: vcsim.Datastore,
		ISODatastore: vcsim.Datastore, ResourcePool: vcsim.ResourcePool, Folder: vcsim.Folder, Network: vcsim.Network}, AntiAffinity: true}
	if missing, err := h.client.CheckPrivileges(ctx, spec); err != nil || len(missing) != 0 {
		t.Fatalf("all granted: %v, %v", missing, err)
	}
	h.env.DenyPrivilege(vcsim.Cluster, vsphere.PrivClusterEdit)
	missing, err := h.client.CheckPrivileges(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []vsphere.MissingPrivileges{{Kind: vsphere.PrivilegeCluster, Name: vcsim.Cluster, Privileges: []string{vsphere.PrivClusterEdit}}}
	if !reflect.DeepEqual(missing, want) {
		t.Fatalf("missing %+v, want %+v", missing, want)
	}
}

// TestRequiredPrivilegesAreDocumented: every privilege the check asks for is listed in
// docs/vcenter-privileges.md, both in its role table (what an operator builds the role from) and in its list
// of what the preflight checks, so a role built from the doc is never refused by the check.
func TestRequiredPrivilegesAreDocumented(t *testing.T) {
	doc := readRepoFile(t, "docs/vcenter-privileges.md")
	role := markdownSection(t, doc, "## The role")
	checked := markdownSection(t, doc, "## What the preflight checks")
	all := vsphere.RequiredPrivileges(vsphere.PrivilegeSpec{EjectAfterInstall: true, RecoverDiscoveryBoot: true, PCIDevices: true, AntiAffinity: true,
		PlacementSpec: vsphere.PlacementSpec{Tags: []string{"c/t"}}}, true)
	for kind, privs := range all {
		for _, p := range privs {
			if !strings.Contains(role, "`"+p+"`") {
				t.Errorf("%s privilege %s is not in docs/vcenter-privileges.md's role table", kind, p)
			}
			if !strings.Contains(checked, "`"+p+"`") {
				t.Errorf("%s privilege %s is not in docs/vcenter-privileges.md's list of what the preflight checks", kind, p)
			}
		}
	}
}

func simPrivilegeSpec() vsphere.PrivilegeSpec {
	return vsphere.PrivilegeSpec{PlacementSpec: vsphere.PlacementSpec{Datacenter: vcsim.Datacenter,
		DatastoreCluster: vcsim.DatastoreCluster, ISODatastore: vcsim.Datastore, ResourcePool: vcsim.ResourcePool,
		Folder: vcsim.Folder, Network: vcsim.Network, Tags: []string{vcsim.TagCategory + "/" + vcsim.Tags[0]}}}
}

func TestCheckPrivilegesOnTheSimulator(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	spec := simPrivilegeSpec()

	missing, err := h.client.CheckPrivileges(ctx, spec)
	if err != nil || len(missing) != 0 {
		t.Fatalf("everything granted: missing %v, err %v", missing, err)
	}
	_, byMethod := h.calls.snapshot()
	if byMethod["HasPrivilegeOnEntities"] != 1 {
		t.Fatalf("one HasPrivilegeOnEntities call expected, got %d", byMethod["HasPrivilegeOnEntities"])
	}

	h.env.DenyPrivilege(vcsim.Network, "Network.Assign")
	h.env.DenyPrivilege(vcsim.PodDatastore, "Datastore.AllocateSpace")
	h.env.DenyPrivilege(vcsim.Datastore, "Datastore.Browse")
	h.env.DenyPrivilege("vm", "Folder.Create") // the datacenter's VM folder: agent-forge/test does not exist yet
	h.env.DenyPrivilege("vm", "VirtualMachine.Interact.SetCDMedia")
	missing, err = h.client.CheckPrivileges(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []vsphere.MissingPrivileges{
		{Kind: vsphere.PrivilegeFolder, Name: "/DC0/vm", Privileges: []string{"Folder.Create"}},
		{Kind: vsphere.PrivilegeDatastore, Name: vcsim.PodDatastore + " (in datastore cluster " + vcsim.DatastoreCluster + ")",
			Privileges: []string{"Datastore.AllocateSpace"}},
		{Kind: vsphere.PrivilegeISODatastore, Name: vcsim.Datastore, Privileges: []string{"Datastore.Browse"}},
		{Kind: vsphere.PrivilegeNetwork, Name: vcsim.Network, Privileges: []string{"Network.Assign"}},
	}
	if !reflect.DeepEqual(missing, want) {
		t.Fatalf("missing:\n got %+v\nwant %+v", missing, want)
	}

	// Ejection needs SetCDMedia; an existing folder no longer needs Folder.Create.
	spec.EjectAfterInstall = true
	if err := h.env.EnsureFolder(ctx, vcsim.Folder); err != nil {
		t.Fatal(err)
	}
	h.env.DenyPrivilege("test", "VirtualMachine.Interact.SetCDMedia")
	missing, err = h.client.CheckPrivileges(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) == 0 || !reflect.DeepEqual(missing[0], vsphere.MissingPrivileges{Kind: vsphere.PrivilegeFolder,
		Name: "/DC0/vm/" + vcsim.Folder, Privileges: []string{"VirtualMachine.Interact.SetCDMedia"}}) {
		t.Fatalf("folder entry: %+v", missing)
	}

	h.env.ResetPrivileges()
	if missing, err = h.client.CheckPrivileges(ctx, spec); err != nil || len(missing) != 0 {
		t.Fatalf("after reset: missing %v, err %v", missing, err)
	}
}

func TestCheckPrivilegesSingleDatastoreAndSharedISODatastore(t *testing.T) {
	h := newHarness(t)
	ctx := testContext(t)
	spec := simPrivilegeSpec()
	spec.DatastoreCluster = vcsim.Datastore // the same datastore holds disks and the ISO: one entry
	h.env.DenyPrivilege(vcsim.AnyEntity, "Datastore.AllocateSpace")
	h.env.DenyPrivilege(vcsim.Datastore, "Datastore.FileManagement")
	missing, err := h.client.CheckPrivileges(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []vsphere.MissingPrivileges{{Kind: vsphere.PrivilegeDatastore, Name: vcsim.Datastore,
		Privileges: []string{"Datastore.AllocateSpace", "Datastore.FileManagement"}}}
	if !reflect.DeepEqual(missing, want) {
		t.Fatalf("missing:\n got %+v\nwant %+v", missing, want)
	}
}

// markdownSection returns the text of md from the line heading (a "## " heading) up to the next "## ".
func markdownSection(t *testing.T, md, heading string) string {
	t.Helper()
	start := strings.Index(md, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("no section %q", heading)
	}
	section := md[start+1:]
	if end := strings.Index(section[len(heading):], "\n## "); end >= 0 {
		section = section[:len(heading)+end]
	}
	return section
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
