package world_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	vimtypes "github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// startVCenter starts an in-process VPX simulator for one test and returns a logged-in client.
func startVCenter(t *testing.T) *vim25.Client {
	t.Helper()
	model := simulator.VPX()
	if err := model.Create(); err != nil {
		t.Fatal(err)
	}
	server := model.Service.NewServer()
	t.Cleanup(func() {
		server.Close()
		model.Remove()
	})
	c, err := govmomi.NewClient(t.Context(), server.URL, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Logout(context.Background()) })
	return c.Client
}

// createVM creates and powers on a worker-sized VM (2 vCPU, 8 GiB, a 120 GiB thin disk,
// disk.EnableUUID) with a vmxnet3 NIC and, when iso is set, a CD-ROM booting the discovery image the
// scenarios' InfraEnvs serve (uploaded to that datastore path).
func createVM(t *testing.T, c *vim25.Client, name, iso string) *object.VirtualMachine {
	t.Helper()
	return createVMWith(t, c, vmShape{name: name, iso: iso, content: images.Content(), cpus: 2, memoryMB: 8192, diskGiB: 120, diskUUID: true})
}

// vmShape is a test VM's hardware and boot medium.
type vmShape struct {
	name, iso string
	// content is what is uploaded to iso (nil: the file is not touched).
	content           []byte
	cpus, memoryMB    int32
	diskGiB           int64
	diskUUID, stayOff bool
}

func createVMWith(t *testing.T, c *vim25.Client, v vmShape) *object.VirtualMachine {
	t.Helper()
	ctx := t.Context()
	finder := find.NewFinder(c)
	dc, err := finder.Datacenter(ctx, "DC0")
	must(t, err)
	finder.SetDatacenter(dc)
	folders, err := dc.Folders(ctx)
	must(t, err)
	pool, err := finder.ResourcePool(ctx, "DC0_C0/Resources")
	must(t, err)
	network, err := finder.Network(ctx, "VM Network")
	must(t, err)
	ds, err := finder.Datastore(ctx, "LocalDS_0")
	must(t, err)
	backing, err := network.EthernetCardBackingInfo(ctx)
	must(t, err)
	nic, err := object.EthernetCardTypes().CreateEthernetCard("vmxnet3", backing)
	must(t, err)
	devices := object.VirtualDeviceList{nic}
	scsi, err := devices.CreateSCSIController("pvscsi")
	must(t, err)
	devices = append(devices, scsi)
	disk := devices.CreateDisk(scsi.(vimtypes.BaseVirtualController), ds.Reference(), "")
	disk.CapacityInKB = v.diskGiB << 20
	devices = append(devices, disk)
	if v.iso != "" {
		if v.content != nil {
			uploadISO(t, c, dc, ds, v.iso, v.content)
		}
		ide, err := devices.CreateIDEController()
		must(t, err)
		devices = append(devices, ide)
		cdrom, err := devices.CreateCdrom(ide.(*vimtypes.VirtualIDEController))
		must(t, err)
		cdrom = devices.InsertIso(cdrom, v.iso)
		cdrom.Connectable = &vimtypes.VirtualDeviceConnectInfo{StartConnected: true, Connected: true}
		devices = append(devices, cdrom)
	}
	changes, err := devices.ConfigSpec(vimtypes.VirtualDeviceConfigSpecOperationAdd)
	must(t, err)
	spec := vimtypes.VirtualMachineConfigSpec{
		Name: v.name, GuestId: "rhel9_64Guest", NumCPUs: v.cpus, MemoryMB: int64(v.memoryMB),
		Files:        &vimtypes.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
		DeviceChange: changes,
	}
	if v.diskUUID {
		spec.ExtraConfig = []vimtypes.BaseOptionValue{&vimtypes.OptionValue{Key: "disk.EnableUUID", Value: "TRUE"}}
	}
	task, err := folders.VmFolder.CreateVM(ctx, spec, pool, nil)
	must(t, err)
	info, err := task.WaitForResult(ctx)
	must(t, err)
	vm := object.NewVirtualMachine(c, info.Result.(vimtypes.ManagedObjectReference))
	if !v.stayOff {
		task, err = vm.PowerOn(ctx)
		must(t, err)
		must(t, task.Wait(ctx))
	}
	return vm
}

// uploadISO writes content to the datastore path "[LocalDS_0] dir/file.iso", as the operator uploads
// the image it downloaded.
func uploadISO(t *testing.T, c *vim25.Client, dc *object.Datacenter, ds *object.Datastore, path string, content []byte) {
	t.Helper()
	var p object.DatastorePath
	if !p.FromString(path) {
		t.Fatalf("bad datastore path %q", path)
	}
	if dir := filepath.Dir(p.Path); dir != "." {
		err := object.NewFileManager(c).MakeDirectory(t.Context(), ds.Path(dir), dc, true)
		must(t, err)
	}
	up := soap.DefaultUpload
	up.ContentLength = int64(len(content))
	must(t, ds.Upload(t.Context(), bytes.NewReader(content), p.Path, &up))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// scenario creates the hub objects of one test in fresh namespaces (a NodePool of upgradeType Replace).
func scenario(t *testing.T) *world.Scenario {
	t.Helper()
	return scenarioOfType(t, world.UpgradeTypeReplace)
}

// scenarioOfType is scenario with the NodePool's spec.management.upgradeType.
func scenarioOfType(t *testing.T, upgradeType string) *world.Scenario {
	t.Helper()
	ns := newNamespace(t)
	s, err := world.Setup(t.Context(), k8s, world.SetupOptions{Namespace: ns, ISOURL: images.URL(), UpgradeType: upgradeType})
	must(t, err)
	return s
}

func newWorld(t *testing.T, s *world.Scenario, opts world.Options) (*world.Driver, *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	if opts.Client == nil {
		opts.Client = k8s
	}
	opts.Namespaces = s.Namespaces()
	opts.Clock = clk
	opts.Kubeconfig = kubeconfig
	if opts.InfraEnv == nil {
		opts.InfraEnv = &s.InfraEnv
	}
	d, err := world.New(opts)
	must(t, err)
	return d, clk
}

func list(t *testing.T, gvkList string, ns string) []unstructured.Unstructured {
	t.Helper()
	gvk := map[string]struct{ g, v, k string }{
		"Agent":        {"agent-install.openshift.io", "v1beta1", "AgentList"},
		"AgentMachine": {"capi-provider.agent-install.openshift.io", "v1beta1", "AgentMachineList"},
		"Machine":      {"cluster.x-k8s.io", "v1beta2", "MachineList"},
		"MachineSet":   {"cluster.x-k8s.io", "v1beta2", "MachineSetList"},
	}[gvkList]
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(gvk.g + "/" + gvk.v)
	l.SetKind(gvk.k)
	must(t, k8s.List(t.Context(), l, client.InNamespace(ns)))
	return l.Items
}

func get(t *testing.T, kind string, key types.NamespacedName) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	switch kind {
	case "Agent":
		u.SetGroupVersionKind(world.AgentGVK)
	case "AgentMachine":
		u.SetGroupVersionKind(world.AgentMachineGVK)
	case "Machine":
		u.SetGroupVersionKind(world.MachineGVK)
	case "MachineSet":
		u.SetGroupVersionKind(world.MachineSetGVK)
	case "NodePool":
		u.SetGroupVersionKind(world.NodePoolGVK)
	}
	must(t, k8s.Get(t.Context(), key, u))
	return u
}

func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

func step(t *testing.T, d *world.Driver) {
	t.Helper()
	if _, err := d.Settle(t.Context(), 20); err != nil {
		t.Fatal(err)
	}
}

// until steps the world until ok holds: CAPI runs on its own (a real process, on the wall clock), so
// what it does shows up between passes. Bounded: 60 s (poll's bound).
func until(t *testing.T, d *world.Driver, what string, ok func() bool) {
	t.Helper()
	poll(t, what, func() bool {
		if _, err := d.Step(t.Context()); err != nil {
			t.Logf("world step: %v", err)
		}
		return ok()
	})
}

// poll waits for ok without stepping the world (CAPI, a real process, moves on its own). Bounded: 60 s.
func poll(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prepareRegisteredAgent prepares an Agent a VM registered the way the operator does: the pool's labels,
// approved, and hostname.
func prepareRegisteredAgent(t *testing.T, s *world.Scenario, a *unstructured.Unstructured, hostname string) {
	t.Helper()
	patch := client.MergeFrom(a.DeepCopy())
	lbls := a.GetLabels()
	for k, v := range s.AgentLabels {
		lbls[k] = v
	}
	a.SetLabels(lbls)
	_ = unstructured.SetNestedField(a.Object, true, "spec", "approved")
	_ = unstructured.SetNestedField(a.Object, hostname, "spec", "hostname")
	must(t, k8s.Patch(t.Context(), a, patch))
}

// prepareAgent creates an Agent the way the operator leaves it after preparing it: pool labels,
// approved, hostname, and assisted-service's conditions of a connected, validated, unbound host.
func prepareAgent(t *testing.T, s *world.Scenario, name string, approved bool) types.NamespacedName {
	t.Helper()
	a := &unstructured.Unstructured{}
	a.SetGroupVersionKind(world.AgentGVK)
	a.SetNamespace(s.Namespace)
	a.SetName(name)
	lbls := map[string]string{world.LabelInfraEnv: s.InfraEnv.Name}
	for k, v := range s.AgentLabels {
		lbls[k] = v
	}
	a.SetLabels(lbls)
	// The hostname names the Node the installed host registers: unique in the shared API server.
	a.Object["spec"] = map[string]any{"approved": approved, "hostname": name + "-" + s.Namespace, "role": "worker"}
	must(t, k8s.Create(t.Context(), a))
	// A worker-sized host's inventory: its validations pass once it is bound.
	a.Object["status"] = map[string]any{"inventory": map[string]any{
		"hostname": name, "cpu": map[string]any{"count": int64(4)}, "memory": map[string]any{"physicalBytes": int64(16) << 30},
		"disks": []any{map[string]any{"id": "/dev/sda", "name": "sda", "driveType": "HDD", "sizeBytes": int64(120) << 30,
			"serial": "6000c29" + name, "installationEligibility": map[string]any{"eligible": true, "notEligibleReasons": []any{}}}},
	}, "debugInfo": map[string]any{"state": "known-unbound"}}
	unstructuredcond.Set(a, time.Now(),
		unstructuredcond.Condition{Type: "SpecSynced", Status: "True", Reason: "SyncOK"},
		unstructuredcond.Condition{Type: "Connected", Status: "True", Reason: "AgentIsConnected"},
		unstructuredcond.Condition{Type: "RequirementsMet", Status: "True", Reason: "AgentIsReady"},
		unstructuredcond.Condition{Type: "Validated", Status: "True", Reason: "ValidationsPassing"},
		unstructuredcond.Condition{Type: "Bound", Status: "False", Reason: "Unbound"},
		unstructuredcond.Condition{Type: "Installed", Status: "False", Reason: "InstallationNotStarted"},
	)
	must(t, k8s.Status().Update(t.Context(), a))
	return client.ObjectKeyFromObject(a)
}

// adoptingMachines are the Machines that own (adopted) the scenario's AgentMachines, one per adopted
// AgentMachine.
func adoptingMachines(t *testing.T, s *world.Scenario) []types.NamespacedName {
	t.Helper()
	var out []types.NamespacedName
	for _, am := range list(t, "AgentMachine", s.ControlPlaneNamespace) {
		for _, o := range am.GetOwnerReferences() {
			if o.Kind == "Machine" {
				out = append(out, types.NamespacedName{Namespace: am.GetNamespace(), Name: o.Name})
				break
			}
		}
	}
	return out
}
