package agents

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
