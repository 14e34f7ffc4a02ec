package pool

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
)

// A late Agent is the destroyed VM's only when its MAC and its serial both are: a MAC alone may be a
// static-IP lease's, handed to the VM that replaced it.
func TestDestroyedHostOf(t *testing.T) {
	const bios = "4203c4e1-7c5b-3f7a-8a19-0b6f2d9e5a10"
	hosts := []poolmemory.DestroyedHost{{VM: "w-1", MAC: "00:50:56:aa:00:01", BIOSUUID: bios}}
	agent := func(mac, serial string) agents.Agent {
		u := agents.New(agents.AgentGVK)
		u.SetName("a")
		if mac != "" {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"macAddress": mac}}, "status", "inventory", "interfaces")
		}
		if serial != "" {
			_ = unstructured.SetNestedField(u.Object, serial, "status", "inventory", "systemVendor", "serialNumber")
		}
		return agents.AgentFrom(u)
	}
	for _, tc := range []struct {
		name  string
		agent agents.Agent
		want  bool
	}{
		{"MAC and serial (VMware's serial form)", agent("00:50:56:aa:00:01", agents.SerialFromBIOSUUID(bios)), true},
		{"MAC and serial, upper-case MAC", agent("00:50:56:AA:00:01", agents.SerialFromBIOSUUID(bios)), true},
		{"same MAC, another serial", agent("00:50:56:aa:00:01", agents.SerialFromBIOSUUID("4203c4e1-7c5b-3f7a-8a19-0b6f2d9e5a11")), false},
		{"same MAC, no serial reported yet", agent("00:50:56:aa:00:01", ""), false},
		{"no inventory yet", agent("", ""), false},
		{"same serial, another MAC", agent("00:50:56:aa:00:02", agents.SerialFromBIOSUUID(bios)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, ok := destroyedHostOf(tc.agent, hosts)
			if ok != tc.want || (ok && h.VM != "w-1") {
				t.Fatalf("destroyedHostOf = %+v, %v; want match %v", h, ok, tc.want)
			}
		})
	}
}
