package bindable

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// agent builds an Agent: its labels, spec.approved (when approved is not nil) and one condition per
// "Type=Status" pair.
func agent(lbls map[string]string, approved *bool, conds ...[2]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	u.SetLabels(lbls)
	if approved != nil {
		u.Object["spec"] = map[string]any{"approved": *approved}
	}
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"})
	}
	u.Object["status"] = map[string]any{"conditions": cs}
	return u
}

func TestAgent(t *testing.T) {
	yes, no := true, false
	validated, connected, unbound := [2]string{"Validated", "True"}, [2]string{"Connected", "True"}, [2]string{"Bound", "False"}
	free := [][2]string{validated, connected, unbound}
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		approved *bool
		conds    [][2]string
		want     bool
	}{
		{"approved, Validated, Connected, Bound=False: free (known-unbound)", nil, &yes, free, true},
		{"other labels do not matter", map[string]string{"pool": "p"}, &yes, free, true},
		{"reserved: agentMachineRef label", map[string]string{LabelAgentMachineRef: "am-1"}, &yes, free, false},
		{"an empty agentMachineRef label still excludes it", map[string]string{LabelAgentMachineRef: ""}, &yes, free, false},
		{"not approved", nil, &no, free, false},
		{"spec.approved unset", nil, nil, free, false},
		{"Validated=False", nil, &yes, [][2]string{{"Validated", "False"}, connected, unbound}, false},
		{"Validated missing", nil, &yes, [][2]string{connected, unbound}, false},
		{"Connected=False (disconnected)", nil, &yes, [][2]string{validated, {"Connected", "False"}, unbound}, false},
		{"Connected missing (required since cpa e87c2e0)", nil, &yes, [][2]string{validated, unbound}, false},
		{"Bound=True", nil, &yes, [][2]string{validated, connected, {"Bound", "True"}}, false},
		{"Bound=Unknown", nil, &yes, [][2]string{validated, connected, {"Bound", "Unknown"}}, false},
		{"Bound missing", nil, &yes, [][2]string{validated, connected}, false},
		{"unbinding-pending-user-action: Bound=False but Validated=False", nil, &yes, [][2]string{{"Validated", "False"}, connected, unbound}, false},
		{"no conditions at all", nil, &yes, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Agent(agent(tc.labels, tc.approved, tc.conds...)); got != tc.want {
				t.Errorf("Agent = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestAgentFor(t *testing.T) {
	yes := true
	free := [][2]string{{"Validated", "True"}, {"Connected", "True"}, {"Bound", "False"}}
	pool := labels.SelectorFromSet(labels.Set{"nodepool": "np-1"})
	for _, tc := range []struct {
		name   string
		labels map[string]string
		sel    labels.Selector
		want   bool
	}{
		{"matching the selector", map[string]string{"nodepool": "np-1"}, pool, true},
		{"another NodePool's Agent", map[string]string{"nodepool": "np-2"}, pool, false},
		{"unlabelled Agent, selector set", nil, pool, false},
		{"no selector: every Agent", nil, nil, true},
		{"selector matching everything", nil, labels.Everything(), true},
		{"matching but reserved", map[string]string{"nodepool": "np-1", LabelAgentMachineRef: "am"}, pool, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AgentFor(agent(tc.labels, &yes, free...), tc.sel); got != tc.want {
				t.Errorf("AgentFor = %t, want %t", got, tc.want)
			}
		})
	}
	if AgentFor(agent(map[string]string{"nodepool": "np-1"}, nil, free...), pool) {
		t.Error("a matching Agent that is not approved is bindable")
	}
}
