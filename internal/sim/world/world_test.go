package world_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	vimtypes "github.com/vmware/govmomi/vim25/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/sim/world"
)

func TestScaleUpRendersWaitingAgentMachines(t *testing.T) {
	for _, tc := range []struct {
		shape             world.ConditionShape
		condType, reason  string
		wantAgentReserved bool
	}{
		{world.ShapeCurrent, "AgentReserved", "NoSuitableAgents", true},
		{world.ShapeV1Beta1, "AgentReserved", "NoSuitableAgents", true},
		{world.ShapeLegacyReady, "Ready", "NoSuitableAgents", false},
	} {
		s := scenario(t)
		d, _ := newWorld(t, s, world.Options{Shape: tc.shape})
		must(t, d.SetReplicas(t.Context(), s.NodePool, 3))
		step(t, d)

		machines := list(t, "Machine", s.ControlPlaneNamespace)
		ams := list(t, "AgentMachine", s.ControlPlaneNamespace)
		if len(machines) != 3 || len(ams) != 3 {
			t.Fatalf("shape %d: want 3 Machines and 3 AgentMachines, got %d and %d", tc.shape, len(machines), len(ams))
		}
		for _, am := range ams {
			if got := am.GetAnnotations()[world.AnnotationNodePool]; got != s.NodePool.String() {
				t.Errorf("nodePool annotation = %q", got)
			}
			owners := am.GetOwnerReferences()
			if len(owners) != 1 || owners[0].Kind != "Machine" || owners[0].Name != am.GetName() {
				t.Errorf("owner references = %v", owners)
			}
			if st, r := condition(&am, tc.condType); st != "False" || r != tc.reason {
				t.Errorf("shape %d: %s = %s/%s", tc.shape, tc.condType, st, r)
			}
			if st, _ := condition(&am, "AgentReserved"); (st != "") != tc.wantAgentReserved {
				t.Errorf("shape %d: AgentReserved present = %v", tc.shape, st != "")
			}
			if sel := str(&am, "spec", "agentLabelSelector", "matchLabels", "agent-forge.containeroo.ch/nodepool"); sel != s.NodePool.Name {
				t.Errorf("agentLabelSelector not copied from the NodePool: %v", am.Object["spec"])
			}
		}
	}
}

func TestRegistersAgentForPoweredOnVMBootingTheISO(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	vm := createVM(t, vc, "worker-0", "[LocalDS_0] agent-forge/discovery.iso")
	d, clk := newWorld(t, s, world.Options{VSphere: vc, RegistrationDelay: 30 * time.Second, ValidationDelay: 10 * time.Second})

	step(t, d)
	if got := list(t, "Agent", s.Namespace); len(got) != 0 {
		t.Fatalf("registered before RegistrationDelay: %d agents", len(got))
	}
	clk.Step(30 * time.Second)
	step(t, d)
	agents := list(t, "Agent", s.Namespace)
	if len(agents) != 1 { // the simulator's stock VMs boot no ISO and never register
		t.Fatalf("want 1 agent, got %d", len(agents))
	}
	a := &agents[0]

	var mvm mo.VirtualMachine
	must(t, vm.Properties(t.Context(), vm.Reference(), []string{"config"}, &mvm))
	wantMAC := ""
	for _, dev := range mvm.Config.Hardware.Device {
		if nic, ok := dev.(vimtypes.BaseVirtualEthernetCard); ok {
			wantMAC = nic.GetVirtualEthernetCard().MacAddress
		}
	}
	ifaces := a.Object["status"].(map[string]any)["inventory"].(map[string]any)["interfaces"].([]any)
	if got := ifaces[0].(map[string]any)["macAddress"]; wantMAC == "" || got != strings.ToLower(wantMAC) {
		t.Errorf("macAddress = %v, VM NIC = %q", got, wantMAC)
	}
	if got, want := str(a, "status", "inventory", "systemVendor", "serialNumber"), world.SerialFromBIOSUUID(mvm.Config.Uuid); got != want || !strings.HasPrefix(got, "VMware-") {
		t.Errorf("serial = %q, want %q", got, want)
	}
	if a.GetName() == "worker-0" || a.GetName() == mvm.Config.Uuid {
		t.Errorf("agent named after the VM: %s", a.GetName())
	}
	if a.GetLabels()[world.LabelInfraEnv] != s.InfraEnv.Name {
		t.Errorf("labels = %v", a.GetLabels())
	}
	for cond, want := range map[string]string{"Connected": "True", "Validated": "Unknown", "Bound": "False", "Installed": "False"} {
		if st, _ := condition(a, cond); st != want {
			t.Errorf("%s = %s, want %s", cond, st, want)
		}
	}
	clk.Step(10 * time.Second)
	step(t, d)
	a = get(t, "Agent", types.NamespacedName{Namespace: s.Namespace, Name: a.GetName()})
	if st, _ := condition(a, "Validated"); st != "True" {
		t.Errorf("Validated after delay = %s", st)
	}

	// The VM goes away: the Agent stays (the operator deletes it) but is disconnected.
	task, err := vm.PowerOff(t.Context())
	must(t, err)
	must(t, task.Wait(t.Context()))
	task, err = vm.Destroy(t.Context())
	must(t, err)
	must(t, task.Wait(t.Context()))
	step(t, d)
	a = get(t, "Agent", types.NamespacedName{Namespace: s.Namespace, Name: a.GetName()})
	if st, r := condition(a, "Connected"); st != "False" || r != "AgentIsDisconnected" {
		t.Errorf("Connected = %s/%s after the VM was destroyed", st, r)
	}
}

func TestRegistrationFilterKeepsAVMSilent(t *testing.T) {
	s := scenario(t)
	vc := startVCenter(t)
	createVM(t, vc, "mute-0", "[LocalDS_0] discovery.iso")
	createVM(t, vc, "talks-0", "[LocalDS_0] discovery.iso")
	d, _ := newWorld(t, s, world.Options{VSphere: vc})
	d.SetRegistrationFilter(func(vm world.VM) bool { return !strings.HasPrefix(vm.Name, "mute-") })
	step(t, d)
	if got := list(t, "Agent", s.Namespace); len(got) != 1 {
		t.Fatalf("want only the talking VM registered, got %d agents", len(got))
	}
}

func TestBindsPreparedAgentAndInstalls(t *testing.T) {
	s := scenario(t)
	d, clk := newWorld(t, s, world.Options{InstallDelay: time.Minute})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	agentKey := prepareAgent(t, s, "a1", true)
	step(t, d)

	am := &list(t, "AgentMachine", s.ControlPlaneNamespace)[0]
	a := get(t, "Agent", agentKey)
	// The provider's reservation label holds the AgentMachine's UID (getAgentMachineRefLabel).
	if a.GetLabels()[world.LabelAgentMachineRef] != string(am.GetUID()) || a.GetAnnotations()[world.AnnotationAgentMachineRefNamespace] != am.GetNamespace() {
		t.Fatalf("agent not reserved: labels %v annotations %v", a.GetLabels(), a.GetAnnotations())
	}
	if str(a, "spec", "clusterDeploymentName", "name") != s.HostedCluster.Name {
		t.Errorf("clusterDeploymentName = %v", a.Object["spec"])
	}
	if st, _ := condition(a, "Bound"); st != "True" {
		t.Errorf("Bound = %s", st)
	}
	if str(am, "status", "agentRef", "name") != "a1" || str(am, "spec", "providerID") != "agent://a1" {
		t.Errorf("agentmachine not bound: %v", am.Object)
	}
	if st, _ := condition(am, "AgentReserved"); st != "True" {
		t.Errorf("AgentReserved = %s", st)
	}
	if st, _ := condition(a, "Installed"); st == "True" {
		t.Fatal("installed before InstallDelay")
	}
	clk.Step(time.Minute)
	step(t, d)
	a = get(t, "Agent", agentKey)
	if st, r := condition(a, "Installed"); st != "True" || r != "InstallationCompleted" {
		t.Errorf("Installed = %s/%s", st, r)
	}
	m := get(t, "Machine", types.NamespacedName{Namespace: am.GetNamespace(), Name: am.GetName()})
	if str(m, "status", "nodeRef", "name") != "a1" || str(m, "status", "phase") != "Running" {
		t.Errorf("machine status = %v", m.Object["status"])
	}
}

func TestDoesNotBindUnsuitableAgents(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	unapproved := prepareAgent(t, s, "unapproved", false)
	step(t, d)
	if _, taken := get(t, "Agent", unapproved).GetLabels()[world.LabelAgentMachineRef]; taken {
		t.Fatal("unapproved agent reserved")
	}
	am := &list(t, "AgentMachine", s.ControlPlaneNamespace)[0]
	if st, r := condition(am, "AgentReserved"); st != "False" || r != "NoSuitableAgents" {
		t.Errorf("AgentReserved = %s/%s", st, r)
	}
	err := d.ReserveAgent(t.Context(), unapproved, types.NamespacedName{Namespace: am.GetNamespace(), Name: am.GetName()})
	if !errors.Is(err, world.ErrNotSuitable) {
		t.Errorf("ReserveAgent of an unapproved agent: %v", err)
	}
}

func TestReserveAgentOnDemand(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{BindingDisabled: true})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	key := prepareAgent(t, s, "r1", true)
	step(t, d)
	if _, taken := get(t, "Agent", key).GetLabels()[world.LabelAgentMachineRef]; taken {
		t.Fatal("bound while binding is disabled")
	}
	amKey, err := d.ReserveAgentForAnyWaiting(t.Context(), key)
	must(t, err)
	if got, want := get(t, "Agent", key).GetLabels()[world.LabelAgentMachineRef], string(get(t, "AgentMachine", amKey).GetUID()); got != want {
		t.Errorf("agentMachineRef = %q, want the AgentMachine's UID %q", got, want)
	}
}

func TestScaleDownUnbindsAndRemovesMachines(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 3))
	k1, k2 := prepareAgent(t, s, "b1", true), prepareAgent(t, s, "b2", true)
	step(t, d)
	if got := len(list(t, "Machine", s.ControlPlaneNamespace)); got != 3 {
		t.Fatalf("machines = %d", got)
	}

	// 3 → 2: the Machine without an Agent (no nodeRef) goes first; both Agents stay bound.
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	step(t, d)
	if got := len(list(t, "Machine", s.ControlPlaneNamespace)); got != 2 {
		t.Fatalf("machines after 3→2 = %d", got)
	}
	for _, k := range []types.NamespacedName{k1, k2} {
		if st, _ := condition(get(t, "Agent", k), "Bound"); st != "True" {
			t.Errorf("%s unbound on 3→2", k.Name)
		}
	}

	// 2 → 0: both Agents unbound, every Machine and AgentMachine gone.
	must(t, d.SetReplicas(t.Context(), s.NodePool, 0))
	step(t, d)
	if m, am := len(list(t, "Machine", s.ControlPlaneNamespace)), len(list(t, "AgentMachine", s.ControlPlaneNamespace)); m != 0 || am != 0 {
		t.Fatalf("after 2→0: %d machines, %d agentmachines", m, am)
	}
	for _, k := range []types.NamespacedName{k1, k2} {
		a := get(t, "Agent", k)
		if _, ref := a.GetLabels()[world.LabelAgentMachineRef]; ref || str(a, "spec", "clusterDeploymentName", "name") != "" {
			t.Errorf("%s still references its machine: %v", k.Name, a.Object)
		}
		if st, r := condition(a, "Bound"); st != "False" || r != "Unbound" {
			t.Errorf("%s Bound = %s/%s", k.Name, st, r)
		}
	}
}

func TestObserveShowsMachinesAndAgents(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	prepareAgent(t, s, "o1", true)
	step(t, d)
	views, err := d.Observe(t.Context(), s.NodePool)
	must(t, err)
	bound, waiting := 0, 0
	for _, v := range views {
		if v.Agent == s.Namespace+"/o1" && v.Node == "o1" && v.Phase == "Running" {
			bound++
		}
		if v.Waiting && v.Agent == "" {
			waiting++
		}
	}
	if len(views) != 2 || bound != 1 || waiting != 1 {
		t.Errorf("views = %+v", views)
	}
}

func TestStepFollowsNodePoolReplicasUnlessManual(t *testing.T) {
	for _, manual := range []bool{false, true} {
		s := scenario(t)
		d, _ := newWorld(t, s, world.Options{ManualMachines: manual})
		must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
		np := &unstructured.Unstructured{}
		np.SetGroupVersionKind(world.NodePoolGVK)
		must(t, k8s.Get(t.Context(), s.NodePool, np))
		patch := client.MergeFrom(np.DeepCopy())
		_ = unstructured.SetNestedField(np.Object, int64(1), "spec", "replicas")
		must(t, k8s.Patch(t.Context(), np, patch)) // the autoscaler, without the world's help
		step(t, d)
		want := 1
		if manual {
			want = 2
		}
		if got := len(list(t, "Machine", s.ControlPlaneNamespace)); got != want {
			t.Errorf("manual=%v: %d machines, want %d", manual, got, want)
		}
	}
}

func TestTimingReportsPassesAndTheirSlowestPhase(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	if got := d.Timing(); got.Passes != 0 || got.Phase != "" {
		t.Fatalf("before any pass: %+v", got)
	}
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	step(t, d)
	step(t, d)
	got := d.Timing()
	if got.Passes != 2 || got.Phase != "" || !got.PassStart.IsZero() || got.Errors != 0 {
		t.Errorf("after two passes: %+v", got)
	}
	if got.LongestPhase == "" {
		t.Errorf("the slowest phase of the last pass is not named: %+v", got)
	}
}

// writesFirst is a client whose first Update (or status Update, with status) of an object of kind is
// preceded by another writer's change of the same object (assisted-service, the provider's own loop, the
// operator), so the API server refuses that Update with a real conflict.
type writesFirst struct {
	client.Client
	t      *testing.T
	kind   string
	status bool
	fired  bool
}

func (c *writesFirst) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.otherWriterFirst(ctx, obj, false)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *writesFirst) Status() client.SubResourceWriter {
	return &writesFirstStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type writesFirstStatus struct {
	client.SubResourceWriter
	c *writesFirst
}

func (w *writesFirstStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.c.otherWriterFirst(ctx, obj, true)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (c *writesFirst) otherWriterFirst(ctx context.Context, obj client.Object, status bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetKind() != c.kind || status != c.status || c.fired {
		return
	}
	c.fired = true
	other := &unstructured.Unstructured{}
	other.SetGroupVersionKind(u.GroupVersionKind())
	must(c.t, c.Get(ctx, client.ObjectKeyFromObject(obj), other))
	ann := other.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["test.agent-forge.containeroo.ch/other-writer"] = "true"
	other.SetAnnotations(ann)
	must(c.t, c.Client.Update(ctx, other))
}

func TestReserveAgentForAnyWaitingRetriesAConflict(t *testing.T) {
	s := scenario(t)
	racing := &writesFirst{Client: k8s, t: t, kind: world.AgentGVK.Kind}
	d, _ := newWorld(t, s, world.Options{BindingDisabled: true, Client: racing})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	key := prepareAgent(t, s, "r1", true)
	step(t, d)
	amKey, err := d.ReserveAgentForAnyWaiting(t.Context(), key)
	must(t, err)
	if !racing.fired {
		t.Fatal("no conflicting write was made")
	}
	if got, want := get(t, "Agent", key).GetLabels()[world.LabelAgentMachineRef], string(get(t, "AgentMachine", amKey).GetUID()); got != want {
		t.Errorf("agentMachineRef = %q, want the AgentMachine's UID %q", got, want)
	}
	if ref, _, _ := unstructured.NestedString(get(t, "AgentMachine", amKey).Object, "status", "agentRef", "name"); ref != key.Name {
		t.Errorf("AgentMachine agentRef = %q, want %q", ref, key.Name)
	}
}

func TestScaleUpSurvivesTheProvidersFirstStatusWrite(t *testing.T) {
	s := scenario(t)
	racing := &writesFirst{Client: k8s, t: t, kind: world.AgentMachineGVK.Kind, status: true}
	d, _ := newWorld(t, s, world.Options{Client: racing})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	if !racing.fired {
		t.Fatal("no conflicting write was made")
	}
	ams := list(t, "AgentMachine", s.ControlPlaneNamespace)
	if len(ams) != 1 {
		t.Fatalf("%d AgentMachines, want 1", len(ams))
	}
	if st, r := condition(&ams[0], "AgentReserved"); st != "False" || r != "NoSuitableAgents" {
		t.Errorf("AgentReserved = %s/%s, want False/NoSuitableAgents", st, r)
	}
}
