package world

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// MachineView is one Machine of a NodePool as the demo's progress table shows it.
type MachineView struct {
	Name string
	// Phase is the Machine's status.phase (Provisioning, Provisioned, Running).
	Phase string
	// Deleting is true once the Machine has a deletionTimestamp.
	Deleting bool
	// Waiting is true when its AgentMachine waits for an Agent (NoSuitableAgents, no agentRef).
	Waiting bool
	// Agent is the reserved Agent (namespace/name), "" when none.
	Agent string
	// Node is status.nodeRef.name, "" before the node joined.
	Node string
}

// Observe returns the NodePool's Machines, sorted by name, with their AgentMachine's state.
func (d *Driver) Observe(ctx context.Context, nodePool types.NamespacedName) ([]MachineView, error) {
	ctx = withLiveReads(ctx) // a test's direct request acts on what the test just wrote
	machines, err := d.MachinesOf(ctx, nodePool)
	if err != nil {
		return nil, err
	}
	out := make([]MachineView, 0, len(machines))
	for i := range machines {
		m := &machines[i]
		v := MachineView{Name: m.GetName(), Deleting: m.GetDeletionTimestamp() != nil}
		v.Phase, _, _ = unstructured.NestedString(m.Object, "status", "phase")
		v.Node, _, _ = unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		am := newObject(AgentMachineGVK)
		if err := d.c.Get(ctx, types.NamespacedName{Namespace: m.GetNamespace(), Name: infraRefName(m)}, am); err == nil {
			name, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name")
			ns, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "namespace")
			if name != "" {
				v.Agent = ns + "/" + name
			} else {
				v.Waiting = NoSuitableAgents(am)
			}
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// infraRefName is the Machine's AgentMachine (spec.infrastructureRef.name; CAPI names it like the Machine).
func infraRefName(m *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
	if name == "" {
		return m.GetName()
	}
	return name
}

// NoSuitableAgents reads the provider's "nothing fits" on an AgentMachine as it writes it:
// AgentReserved=False/NoSuitableAgents (current providers), or Ready with that reason (providers before
// CAPI v1beta2 conditions).
func NoSuitableAgents(am *unstructured.Unstructured) bool {
	for _, t := range []string{CondAgentReserved, CondReady} {
		if s, r := unstructuredcond.StatusReason(am, t); s == unstructuredcond.False && r == ReasonNoSuitableAgents {
			return true
		}
	}
	return false
}
