package vsphereagent

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// pinFor is the upstream pin (label agent-forge.containeroo.ch/agent-machine) the free Agent a should
// carry: the upstream operator pinned each waiting AgentMachine of its pools to that label
// (spec.agentLabelSelector.matchLabels), and such an AgentMachine only accepts an Agent that carries
// it. The Agent keeps a pin that names a still-waiting pinned AgentMachine, else takes the first one
// no other free Agent is pinned to; "" when none waits. The AgentMachine itself is never changed
// (docs/migration.md explains the choice).
func (r *Reconciler) pinFor(ctx context.Context, a *agents.Agent, pool *afv1.VsphereAgentPool) (string, error) {
	list := agents.NewList(agents.AgentMachineGVK)
	key := pool.Namespace + "/" + pool.Spec.NodePoolRef.Name
	if err := r.List(ctx, list, client.InNamespace(pool.Spec.ControlPlaneNamespace), client.MatchingFields{watch.IndexAgentMachinePool: key}); err != nil {
		return "", err
	}
	waiting := sets.New[string]()
	for i := range list.Items {
		u := &list.Items[i]
		pin, _, _ := unstructured.NestedString(u.Object, "spec", "agentLabelSelector", "matchLabels", afv1.LabelUpstreamAgentMachine)
		if pin != "" && agents.AgentMachineFrom(u).WaitsForAgent() {
			waiting.Insert(pin)
		}
	}
	current := a.Labels[afv1.LabelUpstreamAgentMachine]
	if len(waiting) == 0 || waiting.Has(current) {
		if waiting.Has(current) {
			return current, nil
		}
		return "", nil
	}
	pinned := agents.NewList(agents.AgentGVK)
	if err := r.List(ctx, pinned, client.InNamespace(a.Namespace), client.HasLabels{afv1.LabelUpstreamAgentMachine}); err != nil {
		return "", err
	}
	for i := range pinned.Items {
		other := agents.AgentFrom(&pinned.Items[i])
		if other.Name != a.Name && !other.Deleting && !other.IsBound() && other.Labels[agents.LabelAgentMachineRef] == "" {
			waiting.Delete(other.Labels[afv1.LabelUpstreamAgentMachine])
		}
	}
	free := make([]string, 0, len(waiting))
	for pin := range waiting {
		free = append(free, pin)
	}
	sort.Strings(free)
	if len(free) == 0 {
		return "", nil
	}
	return free[0], nil
}
