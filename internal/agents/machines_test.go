package agents

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestMachineRunsOn(t *testing.T) {
	machine := func(providerID any) *unstructured.Unstructured {
		m := New(MachineGVK())
		if providerID != nil {
			_ = unstructured.SetNestedField(m.Object, providerID, "spec", "providerID")
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		machine *unstructured.Unstructured
		agent   string
		want    bool
	}{
		{"providerID names the Agent", machine("agent://0b1e5c8f"), "0b1e5c8f", true},
		{"another Agent", machine("agent://0b1e5c8f"), "0b1e5c80", false},
		{"a prefix of the Agent's name is not the Agent", machine("agent://0b1e"), "0b1e5c8f", false},
		{"no providerID yet (AgentMachine not ready)", machine(nil), "0b1e5c8f", false},
		{"another provider's scheme", machine("vsphere://0b1e5c8f"), "0b1e5c8f", false},
		{"no Agent name never matches", machine("agent://"), "", false},
	} {
		if got := MachineRunsOn(tc.machine, tc.agent); got != tc.want {
			t.Errorf("%s: MachineRunsOn = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMachineOfAgentMachine: CAPI's MachineSet creates the AgentMachine (owned by the MachineSet, not as
// controller, named like the Machine) and then the Machine (controlled by the MachineSet); the Machine
// controller adds the Machine owner reference to the AgentMachine later. Before that the Machine is
// proven by name, namespace and the MachineSet that controls it; a Machine sharing only the name is not.
func TestMachineOfAgentMachine(t *testing.T) {
	const ms types.UID = "ms-uid"
	owner := func(kind, apiVersion string, uid types.UID, controller bool) metav1.OwnerReference {
		name := "np-7nmcv" // the MachineSet
		if kind == "Machine" {
			name = "np-7nmcv-9l6cx"
		}
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &controller}
	}
	agentMachine := func(refs ...metav1.OwnerReference) AgentMachine {
		u := New(AgentMachineGVK)
		u.SetNamespace("hc-ns")
		u.SetName("np-7nmcv-9l6cx")
		u.SetOwnerReferences(refs)
		return AgentMachineFrom(u)
	}
	machine := func(ns, name string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
		m := New(MachineGVK())
		m.SetNamespace(ns)
		m.SetName(name)
		m.SetOwnerReferences(refs)
		return m
	}
	msRef := owner("MachineSet", "cluster.x-k8s.io/v1beta2", ms, false)
	msCtrl := owner("MachineSet", "cluster.x-k8s.io/v1beta2", ms, true)
	for _, tc := range []struct {
		name    string
		am      AgentMachine
		machine *unstructured.Unstructured
		want    bool
	}{
		{"the Machine owner reference names it", agentMachine(owner("Machine", "cluster.x-k8s.io/v1beta2", "m-uid", true)),
			machine("hc-ns", "np-7nmcv-9l6cx", msCtrl), true},
		{"the owner reference names another Machine", agentMachine(owner("Machine", "cluster.x-k8s.io/v1beta2", "m-uid", true)),
			machine("hc-ns", "np-7nmcv-other", msCtrl), false},
		{"before the Machine controller: same name, controlled by the AgentMachine's MachineSet", agentMachine(msRef),
			machine("hc-ns", "np-7nmcv-9l6cx", msCtrl), true},
		{"same name, but another MachineSet controls it", agentMachine(msRef),
			machine("hc-ns", "np-7nmcv-9l6cx", owner("MachineSet", "cluster.x-k8s.io/v1beta2", "other-ms", true)), false},
		{"same name, the MachineSet only an owner, not the controller", agentMachine(msRef),
			machine("hc-ns", "np-7nmcv-9l6cx", msRef), false},
		{"same name, no owner at all (a stand-alone Machine)", agentMachine(msRef), machine("hc-ns", "np-7nmcv-9l6cx"), false},
		{"same name in another namespace", agentMachine(msRef), machine("other-ns", "np-7nmcv-9l6cx", msCtrl), false},
		{"a MachineSet of another API group", agentMachine(owner("MachineSet", "machine.openshift.io/v1beta1", ms, false)),
			machine("hc-ns", "np-7nmcv-9l6cx", owner("MachineSet", "machine.openshift.io/v1beta1", ms, true)), false},
		{"no owner on the AgentMachine (created by hand)", agentMachine(), machine("hc-ns", "np-7nmcv-9l6cx", msCtrl), false},
	} {
		if got := MachineOfAgentMachine(tc.machine, tc.am); got != tc.want {
			t.Errorf("%s: MachineOfAgentMachine = %v, want %v", tc.name, got, tc.want)
		}
	}
}
