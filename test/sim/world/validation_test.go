package world_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25"
	vimtypes "github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// registerOne boots v, lets the world register it and calculate its validations, and returns its Agent.
func registerOne(t *testing.T, v vmShape, opts world.Options) (*unstructured.Unstructured, *world.Driver, *vim25.Client) {
	t.Helper()
	s := scenario(t)
	vc := startVCenter(t)
	createVMWith(t, vc, v)
	opts.VSphere, opts.ValidationDelay = vc, 10*time.Second
	d, clk := newWorld(t, s, opts)
	step(t, d)
	agents := list(t, "Agent", s.Namespace)
	if len(agents) != 1 {
		t.Fatalf("want 1 Agent, got %d", len(agents))
	}
	if st, r := unstructuredcond.StatusReason(&agents[0], "Validated"); st != "Unknown" || r != "ValidationsUnknown" {
		t.Errorf("before the validations ran: Validated = %s/%s", st, r)
	}
	clk.Step(10 * time.Second)
	step(t, d)
	return get(t, "Agent", client.ObjectKeyFromObject(&agents[0])), d, vc
}

// validationOf finds one validation in status.validationsInfo.
func validationOf(t *testing.T, a *unstructured.Unstructured, category, id string) (status, message string) {
	t.Helper()
	list, _, _ := unstructured.NestedSlice(a.Object, "status", "validationsInfo", category)
	for _, v := range list {
		m := v.(map[string]any)
		if m["id"] == id {
			return m["status"].(string), m["message"].(string)
		}
	}
	t.Fatalf("no validation %s/%s in %v", category, id, a.Object["status"])
	return "", ""
}

// wantInsufficient checks the real shapes of a host failing its validations before binding.
func wantInsufficient(t *testing.T, a *unstructured.Unstructured, state string, messages ...string) {
	t.Helper()
	if got := str(a, "status", "debugInfo", "state"); got != state {
		t.Errorf("state = %q, want %q", got, state)
	}
	st, r := unstructuredcond.StatusReason(a, "Validated")
	msg := condMessage(a, "Validated")
	if st != "False" || r != "ValidationsFailing" || !strings.HasPrefix(msg, "The agent's validations are failing: ") {
		t.Errorf("Validated = %s/%s %q", st, r, msg)
	}
	for _, m := range messages {
		if !strings.Contains(msg, m) {
			t.Errorf("Validated message %q lacks %q", msg, m)
		}
	}
	if st, r := unstructuredcond.StatusReason(a, "RequirementsMet"); st != "False" || r != "AgentNotReady" {
		t.Errorf("RequirementsMet = %s/%s", st, r)
	}
}

func TestTooLittleMemoryForAWorkerIsInsufficient(t *testing.T) {
	a, _, _ := registerOne(t, vmShape{name: "small-mem", iso: "[LocalDS_0] discovery.iso", content: images.Content(),
		cpus: 2, memoryMB: 4096, diskGiB: 120, diskUUID: true}, world.Options{})
	if got, _, _ := unstructured.NestedInt64(a.Object, "status", "inventory", "memory", "physicalBytes"); got != 4<<30 {
		t.Errorf("inventory memory = %d, want the VM's 4 GiB", got)
	}
	if got, _, _ := unstructured.NestedInt64(a.Object, "status", "inventory", "cpu", "count"); got != 2 {
		t.Errorf("inventory cpu count = %d", got)
	}
	wantInsufficient(t, a, "insufficient-unbound",
		"The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is 8.00 GiB, found only 4.00 GiB",
		"Require at least 8.00 GiB RAM for role auto-assign, found only 4.00 GiB")
	if st, _ := validationOf(t, a, "hardware", "has-memory-for-role"); st != "failure" {
		t.Errorf("has-memory-for-role = %s", st)
	}
	if st, msg := validationOf(t, a, "hardware", "has-cpu-cores-for-role"); st != "success" || msg != "Sufficient CPU cores for role auto-assign" {
		t.Errorf("has-cpu-cores-for-role = %s %q", st, msg)
	}
	if st, _ := validationOf(t, a, "network", "connected"); st != "success" {
		t.Errorf("connected = %s", st)
	}
}

func TestLowerRequirementsLetASmallHostPass(t *testing.T) {
	a, _, _ := registerOne(t, vmShape{name: "small-ok", iso: "[LocalDS_0] discovery.iso", content: images.Content(),
		cpus: 2, memoryMB: 4096, diskGiB: 40, diskUUID: true},
		world.Options{WorkerRequirements: world.Requirements{CPUCores: 2, RAMMiB: 4096, DiskSizeGB: 20}})
	if got := str(a, "status", "debugInfo", "state"); got != "known-unbound" {
		t.Errorf("state = %q with the hub's lowered requirements", got)
	}
	if st, r := unstructuredcond.StatusReason(a, "Validated"); st != "True" || r != "ValidationsPassing" {
		t.Errorf("Validated = %s/%s", st, r)
	}
}

func TestTooSmallADiskIsInsufficient(t *testing.T) {
	a, _, _ := registerOne(t, vmShape{name: "small-disk", iso: "[LocalDS_0] discovery.iso", content: images.Content(),
		cpus: 2, memoryMB: 8192, diskGiB: 50, diskUUID: true}, world.Options{})
	wantInsufficient(t, a, "insufficient-unbound", "No eligible disks were found, please check specific disks to see why they are not eligible")
	disks, _, _ := unstructured.NestedSlice(a.Object, "status", "inventory", "disks")
	sda := disks[0].(map[string]any)
	if sda["sizeBytes"] != int64(50)<<30 || sda["driveType"] != "HDD" || sda["byID"] != "/dev/disk/by-id/wwn-0x"+sda["serial"].(string) {
		t.Errorf("sda = %v", sda)
	}
	reasons, _, _ := unstructured.NestedStringSlice(sda, "installationEligibility", "notEligibleReasons")
	if len(reasons) != 1 || reasons[0] != "Disk is too small (disk only has 54 GB, but 100 GB are required)" {
		t.Errorf("notEligibleReasons = %q", reasons)
	}
}

func TestForbiddenHostnameIsInsufficient(t *testing.T) {
	a, d, _ := registerOne(t, vmShape{name: "named-localhost", iso: "[LocalDS_0] discovery.iso", content: images.Content(),
		cpus: 2, memoryMB: 8192, diskGiB: 120, diskUUID: true}, world.Options{})
	if got := str(a, "status", "inventory", "hostname"); !strings.Contains(got, "-") || got == "localhost" {
		t.Errorf("inventory hostname = %q, want the agent's MAC-derived name", got)
	}
	patch := client.MergeFrom(a.DeepCopy())
	_ = unstructured.SetNestedField(a.Object, "localhost", "spec", "hostname")
	must(t, k8s.Patch(t.Context(), a, patch))
	step(t, d)
	a = get(t, "Agent", client.ObjectKeyFromObject(a))
	wantInsufficient(t, a, "insufficient-unbound", "The host name localhost is forbidden")
}

func TestDuplicateHostnameFailsOnceBound(t *testing.T) {
	s, d, hostname := twoAgentsNamedAlike(t)
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	// Both AgentMachines adopted before the world's next pass, so that pass binds both and neither sees the
	// cluster without the other (an Agent bound alone would install; TestDuplicateHostnameOfAnInstallingHost).
	poll(t, "CAPI adopted both AgentMachines", func() bool { return len(adoptingMachines(t, s)) == 2 })
	until(t, d, "both Agents bound", func() bool { _, n := boundAgents(t, s); return n == 2 })
	step(t, d)
	for _, a := range list(t, "Agent", s.Namespace) {
		wantInsufficient(t, &a, "insufficient", "Hostname "+hostname+" is not unique in cluster")
		if st, r := unstructuredcond.StatusReason(&a, "Installed"); st != "False" || r != "InstallationNotStarted" {
			t.Errorf("Installed = %s/%s", st, r)
		}
		if st, _ := validationOf(t, &a, "hardware", "vsphere-disk-uuid-enabled"); st != "success" {
			t.Errorf("vsphere-disk-uuid-enabled = %s with disk.EnableUUID=TRUE", st)
		}
	}
}

// TestDuplicateHostnameOfAnInstallingHost: hostname-unique compares with every host of the cluster that
// has an inventory, whatever its state (assisted-service's isHostnameUnique), so a host bound after another
// with its name waits insufficient while the first one's installation goes on.
func TestDuplicateHostnameOfAnInstallingHost(t *testing.T) {
	s, d, hostname := twoAgentsNamedAlike(t)
	installing := func(a *unstructured.Unstructured) bool {
		st := str(a, "status", "debugInfo", "state")
		return st == "installing" || st == "added-to-existing-cluster"
	}
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	until(t, d, "the first Agent bound and installing", func() bool {
		a, n := boundAgents(t, s)
		return n == 1 && installing(a)
	})
	first, _ := boundAgents(t, s)
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	until(t, d, "the second Agent bound", func() bool { _, n := boundAgents(t, s); return n == 2 })
	step(t, d)
	for _, a := range list(t, "Agent", s.Namespace) {
		if a.GetName() == first.GetName() {
			if !installing(&a) {
				t.Errorf("the first host's state = %q: a later duplicate must not stop an installation", str(&a, "status", "debugInfo", "state"))
			}
			continue
		}
		wantInsufficient(t, &a, "insufficient", "Hostname "+hostname+" is not unique in cluster")
		if st, r := unstructuredcond.StatusReason(&a, "Installed"); st != "False" || r != "InstallationNotStarted" {
			t.Errorf("second host: Installed = %s/%s", st, r)
		}
	}
}

// twoAgentsNamedAlike registers two VMs and prepares both Agents with one hostname, as the operator
// would; unbound they are known-unbound (hostname-unique is not checked without a cluster).
func twoAgentsNamedAlike(t *testing.T) (*world.Scenario, *world.Driver, string) {
	t.Helper()
	s := scenario(t)
	vc := startVCenter(t)
	createVM(t, vc, "dup-0", "[LocalDS_0] discovery.iso")
	createVM(t, vc, "dup-1", "[LocalDS_0] discovery.iso")
	d, _ := newWorld(t, s, world.Options{VSphere: vc})
	step(t, d)
	hostname := "dup-" + s.Namespace
	for _, a := range list(t, "Agent", s.Namespace) {
		if got := str(&a, "status", "debugInfo", "state"); got != "known-unbound" {
			t.Fatalf("unbound: state %q (hostname-unique is not checked without a cluster)", got)
		}
		prepareRegisteredAgent(t, s, &a, hostname)
	}
	return s, d, hostname
}

// boundAgents counts the scenario's Agents with Bound=True and returns the last of them.
func boundAgents(t *testing.T, s *world.Scenario) (last *unstructured.Unstructured, n int) {
	for _, a := range list(t, "Agent", s.Namespace) {
		if st, _ := unstructuredcond.StatusReason(&a, "Bound"); st == "True" {
			n++
			last = a.DeepCopy()
		}
	}
	return last, n
}

func TestEmptyDriveRegistersNothing(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	createVM(t, vc, "no-media", "")
	d, _ := newWorld(t, s, world.Options{VSphere: vc})
	step(t, d)
	if got := list(t, "Agent", s.Namespace); len(got) != 0 {
		t.Fatalf("a VM with an empty drive registered: %d Agents", len(got))
	}
}

func TestForeignISORegistersNothing(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	foreign := append([]byte("not the discovery image: "), images.Content()[:4096]...)
	createVMWith(t, vc, vmShape{name: "foreign", iso: "[LocalDS_0] agent-forge/discovery.iso", content: foreign,
		cpus: 2, memoryMB: 8192, diskGiB: 120, diskUUID: true})
	d, _ := newWorld(t, s, world.Options{VSphere: vc})
	step(t, d)
	if got := list(t, "Agent", s.Namespace); len(got) != 0 {
		t.Fatalf("a VM booting a foreign ISO named like the discovery image registered: %d Agents", len(got))
	}
	if why := d.ForeignBoots()["foreign"]; !strings.Contains(why, "no InfraEnv in scope generated") {
		t.Errorf("ForeignBoots = %v", d.ForeignBoots())
	}
}

func TestInstalledHostBootingDiscoveryAgainAwaitsTheUser(t *testing.T) {
	for _, diskFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "ISO still first", true: "disk first"}[diskFirst], func(t *testing.T) {
			s := scenario(t)
			vc := startVCenter(t)
			vm := createVM(t, vc, "reboots-0", "[LocalDS_0] discovery.iso")
			if diskFirst {
				setDiskFirst(t, vm)
			}
			d, _ := newWorld(t, s, world.Options{VSphere: vc})
			a := prepareRegistered(t, s, d)
			must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
			until(t, d, "the Agent installed", func() bool {
				return unstructuredcond.IsTrue(get(t, "Agent", a), "Installed")
			})
			powerCycle(t, d, vm)
			got := get(t, "Agent", a)
			state := str(got, "status", "debugInfo", "state")
			if diskFirst {
				if state != "added-to-existing-cluster" {
					t.Errorf("state = %q after booting its disk", state)
				}
				return
			}
			if state != "installing-pending-user-action" {
				t.Fatalf("state = %q after booting the discovery image again", state)
			}
			st, r := unstructuredcond.StatusReason(got, "Installed")
			msg := condMessage(got, "Installed")
			if st != "False" || r != "InstallationInProgress" ||
				!strings.Contains(msg, "Expected the host to boot from disk, but it booted the installation image - please reboot and fix boot order to boot from disk ") || !strings.Contains(msg, "(sda, /dev/disk/by-id/wwn-0x") {
				t.Errorf("Installed = %s/%s %q", st, r, msg)
			}
			if st, r := unstructuredcond.StatusReason(got, "RequirementsMet"); st != "True" || r != "AgentAlreadyInstalling" {
				t.Errorf("RequirementsMet = %s/%s", st, r)
			}
			if st, _ := unstructuredcond.StatusReason(got, "Bound"); st != "True" {
				t.Errorf("Bound = %s", st)
			}
		})
	}
}

// prepareRegistered lets the scenario's one VM register and prepares its Agent as the operator does.
func prepareRegistered(t *testing.T, s *world.Scenario, d *world.Driver) client.ObjectKey {
	t.Helper()
	step(t, d)
	agents := list(t, "Agent", s.Namespace)
	if len(agents) != 1 {
		t.Fatalf("agents = %d", len(agents))
	}
	a := &agents[0]
	prepareRegisteredAgent(t, s, a, a.GetName()[:8]+"-"+s.Namespace)
	return client.ObjectKeyFromObject(a)
}

// setDiskFirst sets the VM's boot order to its first disk, then the CD-ROM.
func setDiskFirst(t *testing.T, vm *object.VirtualMachine) {
	t.Helper()
	devices, err := vm.Device(t.Context())
	must(t, err)
	disks := devices.SelectByType((*vimtypes.VirtualDisk)(nil))
	order := []vimtypes.BaseVirtualMachineBootOptionsBootableDevice{
		&vimtypes.VirtualMachineBootOptionsBootableDiskDevice{DeviceKey: disks[0].GetVirtualDevice().Key},
		&vimtypes.VirtualMachineBootOptionsBootableCdromDevice{},
	}
	task, err := vm.Reconfigure(t.Context(), vimtypes.VirtualMachineConfigSpec{BootOptions: &vimtypes.VirtualMachineBootOptions{BootOrder: order}})
	must(t, err)
	must(t, task.Wait(t.Context()))
}

// powerCycle powers the VM off, lets the world see it off, and powers it on again.
func powerCycle(t *testing.T, d *world.Driver, vm *object.VirtualMachine) {
	t.Helper()
	task, err := vm.PowerOff(t.Context())
	must(t, err)
	must(t, task.Wait(t.Context()))
	step(t, d)
	task, err = vm.PowerOn(t.Context())
	must(t, err)
	must(t, task.Wait(t.Context()))
	step(t, d)
}

func condMessage(a *unstructured.Unstructured, t string) string {
	c, _ := unstructuredcond.Get(a, t)
	return c.Message
}

func TestUnreachableNTPIsInsufficient(t *testing.T) {
	a, _, _ := registerOne(t, vmShape{name: "no-ntp", iso: "[LocalDS_0] discovery.iso", content: images.Content(),
		cpus: 2, memoryMB: 8192, diskGiB: 120, diskUUID: true}, world.Options{NTPUnreachable: func(world.VM) bool { return true }})
	wantInsufficient(t, a, "insufficient-unbound", "Host couldn't synchronize with any NTP server")
	if st, msg := validationOf(t, a, "network", "ntp-synced"); st != "failure" || msg != "Host couldn't synchronize with any NTP server" {
		t.Errorf("ntp-synced = %s %q", st, msg)
	}
	sources, _, _ := unstructured.NestedSlice(a.Object, "status", "ntpSources")
	if len(sources) != 1 || sources[0].(map[string]any)["sourceState"] != "unreachable" {
		t.Errorf("ntpSources = %v", sources)
	}
}

// TestResetWithTheISOEjectedBootsTheInstalledDisk: a host waiting at installing-pending-user-action whose
// VM is reset (ResetVM_Task: the VM stays on, its boot time changes) with its CD-ROM emptied boots its
// installed disk and is added-to-existing-cluster again.
func TestResetWithTheISOEjectedBootsTheInstalledDisk(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	vm := createVM(t, vc, "resets-0", "[LocalDS_0] discovery.iso")
	d, _ := newWorld(t, s, world.Options{VSphere: vc})
	a := prepareRegistered(t, s, d)
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	until(t, d, "the Agent installed", func() bool { return unstructuredcond.IsTrue(get(t, "Agent", a), "Installed") })
	powerCycle(t, d, vm) // no boot order: the ISO boots first
	if state := str(get(t, "Agent", a), "status", "debugInfo", "state"); state != "installing-pending-user-action" {
		t.Fatalf("state = %q after booting the discovery image again", state)
	}

	devices, err := vm.Device(t.Context())
	must(t, err)
	cd := devices.SelectByType((*vimtypes.VirtualCdrom)(nil))[0].(*vimtypes.VirtualCdrom)
	must(t, vm.EditDevice(t.Context(), devices.EjectIso(cd)))
	task, err := vm.Reset(t.Context())
	must(t, err)
	must(t, task.Wait(t.Context()))
	step(t, d)
	got := get(t, "Agent", a)
	if state := str(got, "status", "debugInfo", "state"); state != "added-to-existing-cluster" {
		t.Fatalf("state = %q after a reset with the CD-ROM empty", state)
	}
	if st, r := unstructuredcond.StatusReason(got, "Installed"); st != "True" || r != "InstallationCompleted" {
		t.Errorf("Installed = %s/%s", st, r)
	}
}
