package world_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/mo"
	vimtypes "github.com/vmware/govmomi/vim25/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

func TestScaleUpRendersWaitingAgentMachines(t *testing.T) {
	for _, gen := range []world.ProviderGeneration{world.ProviderCurrent, world.ProviderUIDLabel} {
		t.Run(gen.String(), func(t *testing.T) {
			useProvider(t, gen)
			s := scenario(t)
			d, _ := newWorld(t, s, world.Options{Provider: gen})
			must(t, d.SetReplicas(t.Context(), s.NodePool, 3))
			until(t, d, "CAPI made 3 Machines whose AgentMachines wait, the provider holds them", func() bool {
				ws := waiting(t, s)
				for _, am := range ws {
					if !slices.Contains(am.GetFinalizers(), world.FinalizerAgentMachine) {
						return false // adopted after the provider's last pass
					}
				}
				return len(list(t, "Machine", s.ControlPlaneNamespace)) == 3 && len(ws) == 3
			})
			if got := len(list(t, "MachineSet", s.ControlPlaneNamespace)); got != 1 {
				t.Errorf("%d MachineSets, want the MachineDeployment's one", got)
			}
			for _, am := range list(t, "AgentMachine", s.ControlPlaneNamespace) {
				if got := am.GetAnnotations()[world.AnnotationNodePool]; got != s.NodePool.String() {
					t.Errorf("nodePool annotation = %q", got)
				}
				owners := am.GetOwnerReferences()
				if len(owners) != 1 || owners[0].Kind != "Machine" || owners[0].Controller == nil || !*owners[0].Controller {
					t.Errorf("owner references = %v (CAPI's Machine controller adopts it)", owners)
				}
				if !slices.Contains(am.GetFinalizers(), world.FinalizerAgentMachine) {
					t.Errorf("finalizers = %v", am.GetFinalizers())
				}
				m := get(t, "Machine", types.NamespacedName{Namespace: am.GetNamespace(), Name: owners[0].Name})
				if _, ok := m.GetAnnotations()[world.AnnotationPreTerminateHook]; !ok {
					t.Errorf("Machine %s has no pre-terminate hook: %v", m.GetName(), m.GetAnnotations())
				}
				if str(m, "spec", "providerID") != "" {
					t.Errorf("Machine %s has a providerID before any Agent", m.GetName())
				}
				if sel := str(&am, "spec", "agentLabelSelector", "matchLabels", "agent-forge.containeroo.ch/nodepool"); sel != s.NodePool.Name {
					t.Errorf("agentLabelSelector not copied from the NodePool: %v", am.Object["spec"])
				}
				conds := unstructuredcond.ByType(&am)
				switch gen {
				case world.ProviderCurrent:
					if c := conds["AgentReserved"]; c["status"] != "False" || c["reason"] != "NoSuitableAgents" || c["message"] != "" {
						t.Errorf("AgentReserved = %v", c)
					}
					for _, ty := range []string{"AgentSpecSynced", "AgentValidated", "AgentRequirementsMet", "Installed"} {
						if c := conds[ty]; c["status"] != "False" || c["reason"] != "AgentNotYetFound" {
							t.Errorf("%s = %v", ty, c)
						}
					}
					if c := conds["Ready"]; c["status"] != "False" || c["reason"] != "IssuesReported" ||
						!strings.HasPrefix(fmt.Sprint(c["message"]), "* AgentReserved: NoSuitableAgents\n* AgentSpecSynced: Agent not yet reserved") {
						t.Errorf("Ready = %v", c)
					}
					if _, ok := conds["Ready"]["severity"]; ok {
						t.Errorf("severity written by the current provider: %v", conds["Ready"])
					}
				case world.ProviderUIDLabel:
					if c := conds["Ready"]; c["status"] != "False" || c["reason"] != "NoSuitableAgents" || c["severity"] != "Warning" {
						t.Errorf("Ready = %v", c)
					}
				}
			}
		})
	}
}

// waiting lists the scenario's AgentMachines that wait with NoSuitableAgents and an owner Machine.
func waiting(t *testing.T, s *world.Scenario) []unstructured.Unstructured {
	t.Helper()
	var out []unstructured.Unstructured
	for _, am := range list(t, "AgentMachine", s.ControlPlaneNamespace) {
		st, r := unstructuredcond.StatusReason(&am, "AgentReserved")
		if _, r2 := unstructuredcond.StatusReason(&am, "Ready"); r2 == "NoSuitableAgents" {
			st, r = "False", r2
		}
		owned := false
		for _, o := range am.GetOwnerReferences() {
			owned = owned || o.Kind == "Machine"
		}
		if owned && st == "False" && r == "NoSuitableAgents" {
			out = append(out, am)
		}
	}
	return out
}

func TestConditionsBeforeTheOwnerMachineExist(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	am := &unstructured.Unstructured{}
	am.SetGroupVersionKind(world.AgentMachineGVK)
	am.SetNamespace(s.ControlPlaneNamespace)
	am.SetName("not-adopted")
	am.Object["spec"] = map[string]any{}
	must(t, k8s.Create(t.Context(), am))
	step(t, d)
	am = get(t, "AgentMachine", client.ObjectKeyFromObject(am))
	if c := unstructuredcond.ByType(am)["AgentReserved"]; c["status"] != "False" || c["reason"] != "NoSuitableAgents" {
		t.Errorf("AgentReserved = %v", c)
	}
	if len(am.GetFinalizers()) != 0 || str(am, "spec", "providerID") != "" {
		t.Errorf("finalizers %v providerID %q before adoption", am.GetFinalizers(), str(am, "spec", "providerID"))
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
		if st, _ := unstructuredcond.StatusReason(a, cond); st != want {
			t.Errorf("%s = %s, want %s", cond, st, want)
		}
	}
	clk.Step(10 * time.Second)
	step(t, d)
	a = get(t, "Agent", types.NamespacedName{Namespace: s.Namespace, Name: a.GetName()})
	if st, _ := unstructuredcond.StatusReason(a, "Validated"); st != "True" {
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
	if st, r := unstructuredcond.StatusReason(a, "Connected"); st != "False" || r != "AgentIsDisconnected" {
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
	for _, gen := range []world.ProviderGeneration{world.ProviderCurrent, world.ProviderUIDLabel} {
		t.Run(gen.String(), func(t *testing.T) {
			useProvider(t, gen)
			s := scenario(t)
			d, clk := newWorld(t, s, world.Options{InstallDelay: time.Minute, Provider: gen})
			must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
			agentKey := prepareAgent(t, s, "a1", true)
			until(t, d, "the Agent is reserved and bound", func() bool {
				st, _ := unstructuredcond.StatusReason(get(t, "Agent", agentKey), "Bound")
				return st == "True"
			})
			am := &list(t, "AgentMachine", s.ControlPlaneNamespace)[0]
			a := get(t, "Agent", agentKey)
			want := am.GetName() // the current provider labels with the AgentMachine's name
			if gen == world.ProviderUIDLabel {
				want = string(am.GetUID())
			}
			if a.GetLabels()[world.LabelAgentMachineRef] != want || a.GetAnnotations()[world.AnnotationAgentMachineRefNamespace] != am.GetNamespace() {
				t.Fatalf("agent not reserved as %s: labels %v annotations %v", gen, a.GetLabels(), a.GetAnnotations())
			}
			if str(a, "spec", "clusterDeploymentName", "name") != s.HostedCluster.Name || str(a, "spec", "clusterDeploymentName", "namespace") != s.ControlPlaneNamespace {
				t.Errorf("clusterDeploymentName (the AgentCluster's ClusterDeployment) = %v", a.Object["spec"])
			}
			if str(a, "spec", "machineConfigPool") != "ignition" {
				t.Errorf("machineConfigPool = %q", str(a, "spec", "machineConfigPool"))
			}
			tokenName := str(a, "spec", "ignitionEndpointTokenReference", "name")
			var token corev1.Secret
			if !strings.HasPrefix(tokenName, "agent-user-data-") {
				t.Errorf("ignitionEndpointTokenReference = %v", a.Object["spec"])
			} else if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: s.ControlPlaneNamespace, Name: tokenName}, &token); err != nil || len(token.Data["ignition-token"]) == 0 {
				t.Errorf("token Secret %s: %v %v", tokenName, err, token.Data)
			}
			if str(a, "spec", "ignitionEndpointHTTPHeaders", "NodePool") != s.NodePool.String() {
				t.Errorf("ignitionEndpointHTTPHeaders = %v", a.Object["spec"])
			}
			if str(am, "status", "agentRef", "name") != "a1" || str(am, "spec", "providerID") != "agent://a1" {
				t.Errorf("agentmachine not reserved: %v", am.Object)
			}
			if st, _ := unstructuredcond.StatusReason(am, "AgentReserved"); st != "True" {
				t.Errorf("AgentReserved = %s", st)
			}
			machineKey := types.NamespacedName{Namespace: am.GetNamespace(), Name: am.GetOwnerReferences()[0].Name}
			if m := get(t, "Machine", machineKey); str(m, "spec", "providerID") != "" {
				t.Errorf("the Machine got a providerID before its AgentMachine is ready: %v", m.Object["spec"])
			}
			if st, _ := unstructuredcond.StatusReason(a, "Installed"); st == "True" {
				t.Fatal("installed before InstallDelay")
			}
			clk.Step(time.Minute)
			until(t, d, "CAPI sees the Node of the installed Agent", func() bool {
				m := get(t, "Machine", machineKey)
				return str(m, "status", "nodeRef", "name") != "" && str(m, "status", "phase") == "Running"
			})
			a = get(t, "Agent", agentKey)
			if st, r := unstructuredcond.StatusReason(a, "Installed"); st != "True" || r != "InstallationCompleted" {
				t.Errorf("Installed = %s/%s", st, r)
			}
			m := get(t, "Machine", machineKey)
			if str(m, "spec", "providerID") != "agent://a1" || str(m, "status", "nodeRef", "name") != str(a, "spec", "hostname") {
				t.Errorf("machine = %v / %v", m.Object["spec"], m.Object["status"])
			}
			am = get(t, "AgentMachine", client.ObjectKeyFromObject(am))
			if ready, _, _ := unstructured.NestedBool(am.Object, "status", "ready"); !ready {
				t.Errorf("AgentMachine not ready: %v", am.Object["status"])
			}
		})
	}
}

func TestDoesNotBindUnsuitableAgents(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 1))
	unapproved := prepareAgent(t, s, "unapproved", false)
	until(t, d, "an AgentMachine waits", func() bool { return len(waiting(t, s)) == 1 })
	step(t, d)
	if _, taken := get(t, "Agent", unapproved).GetLabels()[world.LabelAgentMachineRef]; taken {
		t.Fatal("unapproved agent reserved")
	}
	am := &waiting(t, s)[0]
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
	until(t, d, "an AgentMachine waits", func() bool { return len(waiting(t, s)) == 1 })
	if _, taken := get(t, "Agent", key).GetLabels()[world.LabelAgentMachineRef]; taken {
		t.Fatal("bound while binding is disabled")
	}
	amKey, err := d.ReserveAgentForAnyWaiting(t.Context(), key)
	must(t, err)
	if got, want := get(t, "Agent", key).GetLabels()[world.LabelAgentMachineRef], amKey.Name; got != want {
		t.Errorf("agentMachineRef = %q, want the AgentMachine's name %q", got, want)
	}
}

// TestScaleDownDeletesTheMachineCAPIPicks: CAPI's MachineSet picks the Machine (the delete-machine
// annotation first); its pre-terminate hook holds it until the provider has unbound the Agent and seen it
// unbound; then CAPI deletes the AgentMachine, the Node and the Machine. Installed hosts: reclaimed, or
// left at unbinding-pending-user-action (which releases the hook too).
func TestScaleDownDeletesTheMachineCAPIPicks(t *testing.T) {
	for _, outcome := range []world.UnbindOutcome{world.UnbindReclaim, world.UnbindPendingUserAction} {
		t.Run(fmt.Sprint(outcome), func(t *testing.T) {
			s := scenario(t)
			d, clk := newWorld(t, s, world.Options{UnbindInstalled: outcome, ReclaimDelay: time.Minute})
			must(t, d.SetReplicas(t.Context(), s.NodePool, 3))
			k1, k2 := prepareAgent(t, s, "b1", true), prepareAgent(t, s, "b2", true)
			until(t, d, "two Agents installed, one AgentMachine waiting", func() bool {
				st1, _ := unstructuredcond.StatusReason(get(t, "Agent", k1), "Installed")
				st2, _ := unstructuredcond.StatusReason(get(t, "Agent", k2), "Installed")
				return st1 == "True" && st2 == "True" && len(waiting(t, s)) == 1
			})
			// The provider stops reserving, so the AgentMachine still waiting does not take b1 once it is
			// unbound (a reclaimed host is free again and would be taken).
			d.SetBinding(false)
			// Mark the Machine of b1 for deletion: CAPI takes it before the one without an Agent.
			machineOf := func(agent types.NamespacedName) types.NamespacedName {
				for _, am := range list(t, "AgentMachine", s.ControlPlaneNamespace) {
					if str(&am, "status", "agentRef", "name") == agent.Name {
						return types.NamespacedName{Namespace: am.GetNamespace(), Name: am.GetOwnerReferences()[0].Name}
					}
				}
				t.Fatalf("no AgentMachine reserved %s", agent.Name)
				return types.NamespacedName{}
			}
			victim := machineOf(k1)
			m := get(t, "Machine", victim)
			patch := client.MergeFrom(m.DeepCopy())
			m.SetAnnotations(mergeMaps(m.GetAnnotations(), map[string]string{world.AnnotationDeleteMachine: "yes"}))
			must(t, k8s.Patch(t.Context(), m, patch))

			must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
			until(t, d, "the annotated Machine is deleting and b1 unbinding", func() bool {
				m := get(t, "Machine", victim)
				_, labelled := get(t, "Agent", k1).GetLabels()[world.LabelAgentMachineRef]
				return m.GetDeletionTimestamp() != nil && !labelled
			})
			if m := get(t, "Machine", victim); true {
				if _, held := m.GetAnnotations()[world.AnnotationPreTerminateHook]; outcome == world.UnbindReclaim && !held {
					t.Errorf("the hook was released before the reclaimed Agent is unbound: %v", get(t, "Agent", k1).Object["status"])
				}
			}
			if outcome == world.UnbindReclaim {
				if st := str(get(t, "Agent", k1), "status", "debugInfo", "state"); st != "reclaiming" {
					t.Errorf("b1 state = %q, want reclaiming", st)
				}
				clk.Step(time.Minute)
			}
			until(t, d, "the Machine, its AgentMachine and its Node are gone", func() bool {
				return !exists(t, "Machine", victim) && !exists(t, "AgentMachine", victim)
			})
			a := get(t, "Agent", k1)
			if str(a, "spec", "clusterDeploymentName", "name") != "" || str(a, "spec", "machineConfigPool") != "" || str(a, "spec", "ignitionEndpointTokenReference", "name") != "" {
				t.Errorf("b1 still bound in its spec: %v", a.Object["spec"])
			}
			wantState, wantReason := "known-unbound", "Unbound"
			if outcome == world.UnbindPendingUserAction {
				wantState, wantReason = "unbinding-pending-user-action", "UnbindingPendingUserAction"
				if st, r := unstructuredcond.StatusReason(a, "Validated"); st != "False" || r != "Unbinding" {
					t.Errorf("b1 Validated = %s/%s", st, r)
				}
			}
			if st, r := unstructuredcond.StatusReason(a, "Bound"); st != "False" || r != wantReason || str(a, "status", "debugInfo", "state") != wantState {
				t.Errorf("b1 Bound = %s/%s state %q", st, r, str(a, "status", "debugInfo", "state"))
			}
			var node corev1.Node
			if err := k8s.Get(t.Context(), types.NamespacedName{Name: str(a, "spec", "hostname")}, &node); !apierrors.IsNotFound(err) {
				t.Errorf("b1's Node: %v (CAPI deletes it)", err)
			}
			if st, _ := unstructuredcond.StatusReason(get(t, "Agent", k2), "Bound"); st != "True" {
				t.Errorf("b2 unbound although its Machine was not picked")
			}
			if got := len(list(t, "Machine", s.ControlPlaneNamespace)); got != 2 {
				t.Errorf("%d Machines after 3→2", got)
			}
		})
	}
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func exists(t *testing.T, kind string, key types.NamespacedName) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	switch kind {
	case "Machine":
		u.SetGroupVersionKind(world.MachineGVK)
	case "AgentMachine":
		u.SetGroupVersionKind(world.AgentMachineGVK)
	}
	err := k8s.Get(t.Context(), key, u)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestObserveShowsMachinesAndAgents(t *testing.T) {
	s := scenario(t)
	d, _ := newWorld(t, s, world.Options{})
	must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
	key := prepareAgent(t, s, "o1", true)
	var views []world.MachineView
	until(t, d, "one Machine running on o1, one waiting", func() bool {
		var err error
		views, err = d.Observe(t.Context(), s.NodePool)
		must(t, err)
		bound, waiting := 0, 0
		for _, v := range views {
			if v.Agent == key.String() && v.Node == str(get(t, "Agent", key), "spec", "hostname") && v.Phase == "Running" {
				bound++
			}
			if v.Waiting && v.Agent == "" {
				waiting++
			}
		}
		return len(views) == 2 && bound == 1 && waiting == 1
	})
}

func TestStepFollowsNodePoolReplicasUnlessManual(t *testing.T) {
	for _, manual := range []bool{false, true} {
		s := scenario(t)
		d, _ := newWorld(t, s, world.Options{ManualMachines: manual})
		must(t, d.SetReplicas(t.Context(), s.NodePool, 2))
		until(t, d, "2 Machines", func() bool { return len(list(t, "Machine", s.ControlPlaneNamespace)) == 2 })
		np := &unstructured.Unstructured{}
		np.SetGroupVersionKind(world.NodePoolGVK)
		must(t, k8s.Get(t.Context(), s.NodePool, np))
		patch := client.MergeFrom(np.DeepCopy())
		_ = unstructured.SetNestedField(np.Object, int64(1), "spec", "replicas")
		must(t, k8s.Patch(t.Context(), np, patch)) // the autoscaler, without the world's help
		want := int64(1)
		if manual {
			want = 2
		}
		until(t, d, "the MachineDeployment's replicas", func() bool {
			md := &unstructured.Unstructured{}
			md.SetGroupVersionKind(world.MachineDeploymentGVK)
			must(t, k8s.Get(t.Context(), world.MachineDeploymentOf(s), md))
			got, _, _ := unstructured.NestedInt64(md.Object, "spec", "replicas")
			return got == want
		})
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
	until(t, d, "an AgentMachine waits", func() bool { return len(waiting(t, s)) == 1 })
	amKey, err := d.ReserveAgentForAnyWaiting(t.Context(), key)
	must(t, err)
	if !racing.fired {
		t.Fatal("no conflicting write was made")
	}
	if got := get(t, "Agent", key).GetLabels()[world.LabelAgentMachineRef]; got != amKey.Name {
		t.Errorf("agentMachineRef = %q, want the AgentMachine's name %q", got, amKey.Name)
	}
	if ref, _, _ := unstructured.NestedString(get(t, "AgentMachine", amKey).Object, "status", "agentRef", "name"); ref != key.Name {
		t.Errorf("AgentMachine agentRef = %q, want %q", ref, key.Name)
	}
}
