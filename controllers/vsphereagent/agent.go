package vsphereagent

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/shared"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// matchAgent finds the Agent the VM registered: by the NIC MAC we gave it, then by the BIOS-UUID serial.
func (r *Reconciler) matchAgent(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	var found []agents.Agent
	queries := []client.MatchingFields{}
	if mac := va.Status.VM.MACAddress; mac != "" {
		queries = append(queries, client.MatchingFields{shared.IndexAgentMAC: mac})
	}
	if serial := agents.NormalizeUUID(va.Status.VM.BIOSUUID); serial != "" {
		queries = append(queries, client.MatchingFields{shared.IndexAgentSerial: serial})
	}
	for _, q := range queries {
		list := agents.NewList(agents.AgentGVK)
		if err := r.List(ctx, list, client.InNamespace(va.Namespace), q); err != nil {
			return false, err
		}
		for i := range list.Items {
			a := agents.AgentFrom(&list.Items[i])
			if a.Deleting {
				continue
			}
			// By MAC, the serial must agree; by serial, it is the key itself.
			if _, byMAC := q[shared.IndexAgentMAC]; byMAC && !a.IsHostOf(va.Status.VM.MACAddress, va.Status.VM.BIOSUUID) {
				continue
			}
			found = append(found, a)
		}
		if len(found) > 0 {
			break
		}
	}
	if len(found) == 0 {
		if va.Status.VM.AgentName != "" {
			shared.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, shared.ReasonAgentMissing, "Agent "+va.Status.VM.AgentName+" no longer exists", va.Generation)
		} else {
			shared.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, shared.ReasonAwaitingRegistration, "waiting for the VM to boot the discovery ISO and register", va.Generation)
		}
		return true, nil
	}
	sort.Slice(found, func(i, j int) bool {
		return found[i].Obj.GetCreationTimestamp().After(found[j].Obj.GetCreationTimestamp().Time)
	})
	a := found[0]
	s.agent = &a
	va.Status.VM.AgentName = a.Name // shown by the AgentRegistered condition; no Event (one API write per VM)
	shared.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, true, shared.ReasonAgentRegistered, "registered as Agent "+a.Name, va.Generation)
	return true, nil
}

// prepareAgent makes a free Agent bindable: pool labels, role label and spec.role, hostname = VM name,
// approved when the pool says so. Bound Agents, Agents leaving a cluster (unbinding, reclaiming,
// awaiting a reboot into discovery) and released VMs' Agents are never touched.
func (r *Reconciler) prepareAgent(ctx context.Context, s *vmScope) (bool, error) {
	a, va, pool := s.agent, s.va, s.pool
	if a != nil && a.IsBound() {
		recordPreparedBeforeBinding(va, a)
	}
	if a == nil || a.IsBound() || a.IsUnbinding() || va.Status.VM.Phase == afv1.VMPhaseReleased {
		return true, nil
	}
	role := pool.Spec.Agent.Role
	if role == "" {
		role = "worker"
	}
	wantLabels := map[string]string{afv1.LabelNodePoolRole: role, afv1.LabelPool: pool.Name, afv1.LabelVsphereAgent: va.Name}
	for k, v := range pool.Spec.Agent.LabelSet() {
		wantLabels[k] = v
	}
	topology := poolspec.TopologyLabels(pool, va.Spec.FailureDomain)
	for k, v := range topology {
		wantLabels[k] = v
	}
	approve := pool.Spec.Agent.Approve == nil || *pool.Spec.Agent.Approve
	patch := map[string]any{}
	labels := map[string]any{}
	for k, v := range wantLabels {
		if a.Labels[k] != v {
			labels[k] = v
		}
	}
	pin, err := r.pinFor(ctx, a, pool)
	if err != nil {
		return false, err
	}
	if pin != a.Labels[afv1.LabelUpstreamAgentMachine] {
		if pin == "" {
			labels[afv1.LabelUpstreamAgentMachine] = nil // merge patch: remove the stale pin
		} else {
			labels[afv1.LabelUpstreamAgentMachine] = pin
		}
	}
	if len(labels) > 0 {
		patch["metadata"] = map[string]any{"labels": labels}
	}
	spec := map[string]any{}
	if a.Role != role {
		spec["role"] = role
	}
	if a.Hostname != va.Status.VM.Name {
		spec["hostname"] = va.Status.VM.Name
	}
	if approve && !a.Approved {
		spec["approved"] = true
	}
	if nodeLabels := missingNodeLabels(a, topology); len(nodeLabels) > 0 {
		spec["nodeLabels"] = nodeLabels // merged: the Agent's other node labels stay
	}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	if len(patch) > 0 {
		obj := agents.New(agents.AgentGVK)
		obj.SetNamespace(a.Namespace)
		obj.SetName(a.Name)
		if err := r.Patch(ctx, obj, client.RawPatch(types.MergePatchType, mustJSON(patch))); err != nil {
			return false, fmt.Errorf("preparing Agent %s: %w", a.Name, err)
		}
		if err := crashpoint.Hit(ctx, crashpoint.AgentPatched); err != nil {
			return false, err
		}
		// No Event: the AgentPrepared condition says it, and an Event per VM is an API write per VM
		// (Events are for creations, deletions, ejections and refusals).
	}
	shared.SetCondition(&va.Status.Conditions, afv1.ConditionAgentPrepared, true, shared.ReasonAgentPrepared,
		fmt.Sprintf("Agent %s carries the pool's labels, hostname %s and role %s (approved: %t)", a.Name, va.Status.VM.Name, role, approve || a.Approved), va.Generation)
	return true, nil
}

// missingNodeLabels returns the topology labels the Agent's spec.nodeLabels lacks or holds otherwise
// (as a merge patch value); assisted-service applies spec.nodeLabels to the node of a day-2 host.
func missingNodeLabels(a *agents.Agent, want map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range want {
		if got, ok := a.NodeLabels[k]; !ok || got != v {
			out[k] = v
		}
	}
	return out
}
