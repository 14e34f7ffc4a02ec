// Package bindable says which Agents the Agent CAPI provider (openshift/cluster-api-provider-agent)
// could still bind to an AgentMachine, for the test world that plays the provider, the harness and the
// benches. It is written from the provider's rules as notes/agent-provider-facts.md §1 records
// them (cpa controllers/agentmachine_controller.go@79696ce), not from the product's internal/agents: the
// tests must not judge the product by its own reading of those rules.
package bindable

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// LabelAgentMachineRef is the Agent label the provider writes when it reserves the Agent (the
// AgentMachine's name; its UID before cpa 2de8dad) and removes when it unbinds it.
const LabelAgentMachineRef = "agentMachineRef"

// Agent reports whether the provider could bind the Agent now, whatever the AgentMachine's selector:
//   - its list filter: no agentMachineRef label (present at all, whatever its value);
//   - its isValidAgent: spec.approved true and the conditions Validated=True, Connected=True (required
//     since cpa e87c2e0) and Bound=False; a missing condition fails. In assisted-service that is normally
//     host state known-unbound. An Agent left at unbinding-pending-user-action shows Bound=False but
//     Validated=False/Unbinding, so it is not bindable until the host re-registers (facts §3).
//
// The provider checks nothing else: not the hostname (an empty one only breaks the AgentMachine's
// addresses later), not a deletionTimestamp, not spec.clusterDeploymentName.
func Agent(agent *unstructured.Unstructured) bool {
	if _, taken := agent.GetLabels()[LabelAgentMachineRef]; taken {
		return false
	}
	approved, _, _ := unstructured.NestedBool(agent.Object, "spec", "approved")
	return approved &&
		unstructuredcond.IsTrue(agent, "Validated") &&
		unstructuredcond.IsTrue(agent, "Connected") &&
		unstructuredcond.IsFalse(agent, "Bound")
}

// AgentFor is Agent for an AgentMachine whose spec.agentLabelSelector is sel: the provider lists only
// the Agents matching it (nil: an unset selector, every Agent).
func AgentFor(agent *unstructured.Unstructured, sel labels.Selector) bool {
	if sel != nil && !sel.Matches(labels.Set(agent.GetLabels())) {
		return false
	}
	return Agent(agent)
}
