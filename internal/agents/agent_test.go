package agents

import (
	"strings"
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

// TestProofOfHost is the approval rule: only an Agent reporting both the VM's MAC and the VMware serial
// of its BIOS UUID is its host; the MAC alone (no serial yet, a non-VMware one, another machine's) or
// the serial alone proves nothing. MayBeHostOf, for keep decisions only, accepts a missing serial.
func TestProofOfHost(t *testing.T) {
	const mac, uuid = "00:50:56:aa:bb:cc", "421e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e"
	other := SerialFromBIOSUUID("521e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e")
	tests := []struct {
		name     string
		agent    Agent
		vmBIOS   string
		want     HostProof
		mayBeVMs bool
	}{
		{"same MAC and serial", Agent{MACs: []string{mac}, Serial: SerialFromBIOSUUID(uuid)}, uuid, ProvenHost, true},
		{"MAC in other case and separators, serial upper-case", Agent{MACs: []string{NormalizeMAC("00-50-56-AA-BB-CC")}, Serial: strings.ToUpper(SerialFromBIOSUUID(uuid))}, uuid, ProvenHost, true},
		{"serial given as the plain UUID", Agent{MACs: []string{mac}, Serial: uuid}, uuid, ProvenHost, true},
		{"one of several NICs", Agent{MACs: []string{"00:50:56:00:00:01", mac}, Serial: SerialFromBIOSUUID(uuid)}, uuid, ProvenHost, true},
		{"same MAC, no serial reported yet", Agent{MACs: []string{mac}}, uuid, MACNoSerial, true},
		{"same MAC, a non-VMware serial", Agent{MACs: []string{mac}, Serial: "PF1ABCDE"}, uuid, MACNoSerial, true},
		{"same MAC, another machine's serial", Agent{MACs: []string{mac}, Serial: other}, uuid, MACOtherSerial, false},
		{"same MAC and a serial, the VM's BIOS UUID unknown", Agent{MACs: []string{mac}, Serial: SerialFromBIOSUUID(uuid)}, "", MACOtherSerial, true},
		{"the VM's serial, another MAC", Agent{MACs: []string{"00:50:56:aa:bb:cd"}, Serial: SerialFromBIOSUUID(uuid)}, uuid, SerialNoMAC, false},
		{"the VM's serial, no MAC", Agent{Serial: SerialFromBIOSUUID(uuid)}, uuid, SerialNoMAC, false},
		{"neither", Agent{MACs: []string{"00:50:56:aa:bb:cd"}, Serial: other}, uuid, NotHost, false},
		{"nothing reported", Agent{}, uuid, NotHost, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.ProofOfHost(mac, tt.vmBIOS); got != tt.want {
				t.Fatalf("ProofOfHost = %d, want %d", got, tt.want)
			}
			if got := tt.agent.IsHostOf(mac, tt.vmBIOS); got != (tt.want == ProvenHost) {
				t.Fatalf("IsHostOf = %t, want %t", got, tt.want == ProvenHost)
			}
			if got := tt.agent.MayBeHostOf(mac, tt.vmBIOS); got != tt.mayBeVMs {
				t.Fatalf("MayBeHostOf = %t, want %t", got, tt.mayBeVMs)
			}
		})
	}
}

// TestProofOfHostWithSeveralNICs: a VM with several NICs is proven by its first NIC's MAC and its serial,
// and only when every interface the Agent reports is one of the VM's NICs.
func TestProofOfHostWithSeveralNICs(t *testing.T) {
	const mac, second, uuid = "00:50:56:aa:bb:cc", "00:50:56:00:00:02", "421e5c8f-2d3a-4b5c-9d8e-7f6a5b4c3d2e"
	serial := SerialFromBIOSUUID(uuid)
	vm := []string{mac, second}
	tests := []struct {
		name   string
		agent  Agent
		vmMACs []string
		want   HostProof
	}{
		{"both NICs", Agent{MACs: []string{second, mac}, Serial: serial}, vm, ProvenHost},
		{"only the first NIC reported", Agent{MACs: []string{mac}, Serial: serial}, vm, ProvenHost},
		{"MACs in upper case", Agent{MACs: []string{mac, second}, Serial: serial}, []string{"00:50:56:AA:BB:CC", "00-50-56-00-00-02"}, ProvenHost},
		{"a NIC that is not the VM's", Agent{MACs: []string{mac, second, "00:50:56:00:00:99"}, Serial: serial}, vm, ForeignNIC},
		{"the second NIC only: the first NIC's MAC is the key", Agent{MACs: []string{second}, Serial: serial}, vm, SerialNoMAC},
		{"a foreign NIC and no serial yet stays unproven", Agent{MACs: []string{mac, "00:50:56:00:00:99"}}, vm, MACNoSerial},
		{"one NIC: MACs unknown, as before", Agent{MACs: []string{"00:50:56:00:00:01", mac}, Serial: serial}, nil, ProvenHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.ProofOfHostWith(mac, tt.vmMACs, uuid); got != tt.want {
				t.Fatalf("ProofOfHostWith = %d, want %d", got, tt.want)
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
		{"awaiting a reboot into discovery (Bound=False/UnbindingPendingUserAction, Validated=False/Unbinding)", Agent{Approved: true, Hostname: "w1", State: StateUnbindingPendingUserAction,
			Conditions: []Condition{{Type: "Connected", Status: "True"}, {Type: "Validated", Status: "False", Reason: "Unbinding"}, {Type: "Bound", Status: "False", Reason: "UnbindingPendingUserAction"}}}, false},
		{"awaiting a reboot into discovery, even with Validated=True", Agent{Approved: true, Hostname: "w1", Conditions: []Condition{{Type: "Connected", Status: "True"}, {Type: "Validated", Status: "True"}, {Type: "Bound", Status: "False", Reason: "UnbindingPendingUserAction"}}}, false},
		{"reclaiming (Bound=False/Unbinding)", Agent{Approved: true, Hostname: "w1", State: StateReclaiming, Conditions: []Condition{{Type: "Connected", Status: "True"}, {Type: "Validated", Status: "True"}, {Type: "Bound", Status: "False", Reason: "Unbinding"}}}, false},
		{"reclaiming-rebooting, conditions not caught up", Agent{Approved: true, Hostname: "w1", State: StateReclaimingRebooting, Conditions: ok}, false},
		{"back from reclaiming: known-unbound", Agent{Approved: true, Hostname: "w1", State: "known-unbound", Conditions: ok}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.IsSuitable(); got != tt.want {
				t.Fatalf("IsSuitable = %t, want %t", got, tt.want)
			}
		})
	}
}

// The Agent CAPI provider labels a reserved Agent agentMachineRef=<the AgentMachine's name> (current
// providers, since cluster-api-provider-agent 2de8dad) or <its UID> (4bf2401 until then), with the
// AgentMachine's namespace in the agentMachineRefNamespace annotation (since 43fd6e0). Never another
// AgentMachine's Agent: a name counts only with the namespace annotation naming the AgentMachine's namespace.
func TestReservedBy(t *testing.T) {
	am := AgentMachine{Name: "np-abcde", Namespace: "cp", UID: "0b7c6f3e-1111-4a4a-9c9c-123456789abc"}
	// The same name in another hosted cluster's control plane namespace.
	twin := AgentMachine{Name: "np-abcde", Namespace: "cp-other", UID: "5f0e0e0e-2222-4b4b-8d8d-abcdefabcdef"}
	agent := func(ref string, ns *string) Agent {
		u := &unstructured.Unstructured{}
		if ns != nil {
			u.SetAnnotations(map[string]string{AnnotationAgentMachineRefNamespace: *ns})
		}
		return Agent{Labels: map[string]string{LabelAgentMachineRef: ref}, Obj: u}
	}
	ns := func(s string) *string { return &s }
	tests := []struct {
		name  string
		agent Agent
		am    AgentMachine
		want  bool
	}{
		{"name, namespace annotation matches (current provider)", agent(am.Name, ns("cp")), am, true},
		{"name, annotation names another namespace", agent(am.Name, ns("cp-other")), am, false},
		{"name without namespace annotation: ambiguous", agent(am.Name, nil), am, false},
		{"name with an empty namespace annotation", agent(am.Name, ns("")), am, false},
		{"name without any object", Agent{Labels: map[string]string{LabelAgentMachineRef: am.Name}}, am, false},
		{"another AgentMachine's name", agent("np-zzzzz", ns("cp")), am, false},
		{"UID, namespace annotation matches (older provider)", agent(string(am.UID), ns("cp")), am, true},
		{"UID without namespace annotation (before 43fd6e0)", agent(string(am.UID), nil), am, true},
		{"UID without any object", Agent{Labels: map[string]string{LabelAgentMachineRef: string(am.UID)}}, am, true},
		{"UID, annotation names another namespace", agent(string(am.UID), ns("cp-other")), am, false},
		{"another AgentMachine's UID", agent(string(twin.UID), ns("cp")), am, false},
		{"another AgentMachine's UID, no annotation", agent(string(twin.UID), nil), am, false},
		{"not reserved (empty label)", agent("", ns("cp")), am, false},
		{"not reserved (no label)", Agent{Obj: &unstructured.Unstructured{}}, am, false},
		{"same name, other namespace: the twin's reservation is not ours", agent(am.Name, ns("cp-other")), am, false},
		{"same name, other namespace: the twin owns its own reservation", agent(am.Name, ns("cp-other")), twin, true},
		{"same name, other namespace: our reservation is not the twin's", agent(am.Name, ns("cp")), twin, false},
		{"same name, no annotation: neither twin", agent(am.Name, nil), twin, false},
		{"an AgentMachine view without a UID never matches an empty label", agent("", nil), AgentMachine{Name: "x", Namespace: "cp"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.ReservedBy(tt.am); got != tt.want {
				t.Fatalf("ReservedBy(%s/%s) = %t, want %t", tt.am.Namespace, tt.am.Name, got, tt.want)
			}
		})
	}
}

// AnyReservedBy is the pool's demand check: another namespace's same-named AgentMachine's Agent does not
// end this AgentMachine's demand.
func TestAnyReservedBy(t *testing.T) {
	am := AgentMachine{Name: "np-abcde", Namespace: "cp", UID: "0b7c6f3e-1111-4a4a-9c9c-123456789abc"}
	other := &unstructured.Unstructured{}
	other.SetAnnotations(map[string]string{AnnotationAgentMachineRefNamespace: "cp-other"})
	list := []Agent{{Labels: map[string]string{LabelAgentMachineRef: am.Name}, Obj: other}, {Labels: map[string]string{}}}
	if AnyReservedBy(list, am) {
		t.Fatal("an Agent reserved by a same-named AgentMachine in another namespace counts as this one's")
	}
	ours := &unstructured.Unstructured{}
	ours.SetAnnotations(map[string]string{AnnotationAgentMachineRefNamespace: "cp"})
	if !AnyReservedBy(append(list, Agent{Labels: map[string]string{LabelAgentMachineRef: am.Name}, Obj: ours}), am) {
		t.Fatal("this AgentMachine's reservation is not found")
	}
}

// The states between an unbind and the host's next discovery (assisted-service statemachine.go).
func TestUnbindingStates(t *testing.T) {
	bound := func(reason string) []Condition { return []Condition{{Type: "Bound", Status: "False", Reason: reason}} }
	tests := []struct {
		name                string
		agent               Agent
		unbinding, awaiting bool
	}{
		{"known-unbound", Agent{State: "known-unbound", Conditions: bound("Unbound")}, false, false},
		{"installed, bound", Agent{State: "added-to-existing-cluster", Conditions: []Condition{{Type: "Bound", Status: "True", Reason: "Bound"}}}, false, false},
		{"unbinding", Agent{State: StateUnbinding, Conditions: bound("Unbinding")}, true, false},
		{"reclaiming", Agent{State: StateReclaiming}, true, false},
		{"reclaiming-rebooting", Agent{State: StateReclaimingRebooting}, true, false},
		{"unbinding-pending-user-action by state", Agent{State: StateUnbindingPendingUserAction}, true, true},
		{"UnbindingPendingUserAction by condition", Agent{Conditions: bound("UnbindingPendingUserAction")}, true, true},
		{"Unbinding by condition", Agent{Conditions: bound("Unbinding")}, true, false},
		{"UnbindingPendingUserAction reason on a True Bound (not assisted-service's)", Agent{Conditions: []Condition{{Type: "Bound", Status: "True", Reason: "UnbindingPendingUserAction"}}}, false, false},
		{"nothing reported", Agent{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.agent.IsUnbinding(); got != tt.unbinding {
				t.Errorf("IsUnbinding = %t, want %t", got, tt.unbinding)
			}
			if got := tt.agent.AwaitsRebootIntoDiscovery(); got != tt.awaiting {
				t.Errorf("AwaitsRebootIntoDiscovery = %t, want %t", got, tt.awaiting)
			}
		})
	}
}

func TestAgentFromReadsState(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"debugInfo": map[string]any{"state": "unbinding-pending-user-action"}}}}
	if a := AgentFrom(u); a.State != StateUnbindingPendingUserAction || !a.AwaitsRebootIntoDiscovery() {
		t.Fatalf("state %q read from status.debugInfo.state", a.State)
	}
}
