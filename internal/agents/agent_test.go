package agents

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSerialAndUUIDNormalization(t *testing.T) {
	uuid := "421e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e"
	serial := SerialFromBIOSUUID(uuid)
	if serial != "VMware-42 1e 5c 8f 2d 3a 4b 5c-9d 8e 7f 6a 5b 4c 3d 2e" {
		t.Fatalf("serial = %q", serial)
	}
	if NormalizeUUID(serial) != NormalizeUUID(uuid) || NormalizeUUID(uuid) != "421e5c8f2d3a4b5c9d8e7f6a5b4c3d2e" {
		t.Fatalf("normalization disagrees: %q vs %q", NormalizeUUID(serial), NormalizeUUID(uuid))
	}
	if NormalizeUUID("not-a-uuid") != "" {
		t.Fatal("garbage normalizes to a value")
	}
}

func TestIsHostOf(t *testing.T) {
	const mac, uuid = "00:50:56:aa:bb:cc", "421e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e"
	tests := []struct {
		name  string
		agent Agent
		want  bool
	}{
		{"same MAC and serial", Agent{MACs: []string{mac}, Serial: SerialFromBIOSUUID(uuid)}, true},
		{"MAC in other case and separators", Agent{MACs: []string{NormalizeMAC("00-50-56-AA-BB-CC")}, Serial: SerialFromBIOSUUID(uuid)}, true},
		{"same MAC, no serial reported yet", Agent{MACs: []string{mac}}, true},
		{"same MAC, another machine's serial (duplicate MAC)", Agent{MACs: []string{mac}, Serial: SerialFromBIOSUUID("521e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e")}, false},
		{"other MAC", Agent{MACs: []string{"00:50:56:aa:bb:cd"}, Serial: SerialFromBIOSUUID(uuid)}, false},
		{"no MAC", Agent{Serial: SerialFromBIOSUUID(uuid)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.IsHostOf(mac, uuid); got != tt.want {
				t.Fatalf("IsHostOf = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestSuitability(t *testing.T) {
	ok := []Condition{{Type: "Connected", Status: "True"}, {Type: "Validated", Status: "True"}, {Type: "Bound", Status: "False"}}
	tests := []struct {
		name  string
		agent Agent
		want  bool
	}{
		{"approved, connected, validated, named, free", Agent{Approved: true, Hostname: "w1", Conditions: ok}, true},
		{"not approved", Agent{Hostname: "w1", Conditions: ok}, false},
		{"localhost hostname", Agent{Approved: true, Hostname: "localhost", Conditions: ok}, false},
		{"reserved", Agent{Approved: true, Hostname: "w1", Conditions: ok, Labels: map[string]string{LabelAgentMachineRef: "am"}}, false},
		{"bound", Agent{Approved: true, Hostname: "w1", Conditions: append([]Condition{{Type: "Bound", Status: "True"}}, ok[:2]...)}, false},
		{"disconnected", Agent{Approved: true, Hostname: "w1", Conditions: []Condition{{Type: "Connected", Status: "False"}, {Type: "Validated", Status: "True"}}}, false},
		{"being deleted", Agent{Approved: true, Hostname: "w1", Conditions: ok, Deleting: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.IsSuitable(); got != tt.want {
				t.Fatalf("IsSuitable = %t, want %t", got, tt.want)
			}
		})
	}
}

// The Agent CAPI provider labels a reserved Agent with the AgentMachine's UID (its
// getAgentMachineRefLabel) and the namespace in an annotation.
func TestReservedBy(t *testing.T) {
	am := AgentMachine{Name: "np-abcde", Namespace: "cp", UID: "0b7c6f3e-1111-4a4a-9c9c-123456789abc"}
	agent := func(ref, ns string) Agent {
		u := &unstructured.Unstructured{}
		if ns != "" {
			u.SetAnnotations(map[string]string{AnnotationAgentMachineRefNamespace: ns})
		}
		return Agent{Labels: map[string]string{LabelAgentMachineRef: ref}, Obj: u}
	}
	tests := []struct {
		name  string
		agent Agent
		want  bool
	}{
		{"the provider's label: the AgentMachine's UID", agent(string(am.UID), "cp"), true},
		{"a hand-made reservation by name", agent("np-abcde", "cp"), true},
		{"no namespace annotation (older providers)", agent(string(am.UID), ""), true},
		{"another AgentMachine's UID", agent("5f0e0e0e-2222-4b4b-8d8d-abcdefabcdef", "cp"), false},
		{"same UID, another namespace", agent(string(am.UID), "other"), false},
		{"not reserved", agent("", "cp"), false},
		{"no object", Agent{Labels: map[string]string{LabelAgentMachineRef: string(am.UID)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.ReservedBy(am); got != tt.want {
				t.Fatalf("ReservedBy = %t, want %t", got, tt.want)
			}
		})
	}
}
