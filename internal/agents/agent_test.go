package agents

import "testing"

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
