package vsphereagent

import (
	"reflect"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// The topology labels a VM's Agent lacks in spec.nodeLabels (merged, the Agent's other node labels stay).
func TestMissingNodeLabels(t *testing.T) {
	want := map[string]string{afv1.LabelTopologyZone: "a", afv1.LabelTopologyRegion: "eu"}
	a := &agents.Agent{NodeLabels: map[string]string{afv1.LabelTopologyZone: "a", "user": "x"}}
	if got := missingNodeLabels(a, want); !reflect.DeepEqual(got, map[string]any{afv1.LabelTopologyRegion: "eu"}) {
		t.Fatalf("missingNodeLabels = %v", got)
	}
	if got := missingNodeLabels(&agents.Agent{NodeLabels: want}, want); len(got) != 0 {
		t.Fatalf("nothing missing: %v", got)
	}
}
