package vsphereagent

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// matchAgent finds the Agent the VM's host registered: one reporting both the NIC MAC we gave the VM and
// the VMware serial of its BIOS UUID (agents.ProvenHost), the newest if several. An Agent that reports
// only one of them proves nothing (anyone who can read the discovery ISO can boot it with a pool VM's
// MAC): it is reported and left alone. One without a serial yet waits for its inventory.
func (r *Reconciler) matchAgent(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	mac, bios := va.Status.VM.MACAddress, va.Status.VM.BIOSUUID
	queries := []client.MatchingFields{}
	if mac != "" {
		queries = append(queries, client.MatchingFields{watch.IndexAgentMAC: agents.NormalizeMAC(mac)})
	}
	if serial := agents.NormalizeUUID(bios); serial != "" {
		queries = append(queries, client.MatchingFields{watch.IndexAgentSerial: serial})
	}
	var proven, unproven []agents.Agent
	seen := sets.New[string]()
	for _, q := range queries {
		list := agents.NewList(agents.AgentGVK)
		if err := r.List(ctx, list, client.InNamespace(va.Namespace), q); err != nil {
			return false, err
		}
		for i := range list.Items {
			a := agents.AgentFrom(&list.Items[i])
			if a.Deleting || seen.Has(a.Name) {
				continue
			}
			seen.Insert(a.Name)
			switch a.ProofOfHostWith(mac, va.Status.VM.MACAddresses, bios) {
			case agents.ProvenHost:
				proven = append(proven, a)
			case agents.NotHost:
			default:
				unproven = append(unproven, a)
			}
		}
	}
	prev := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentRegistered)
	prevMsg := ""
	if prev != nil {
		prevMsg = prev.Message
	}
	if len(proven) == 0 {
		switch {
		case len(unproven) > 0:
			msg := "no Agent proves it was registered by VM " + va.Status.VM.Name + ": " + describeUnproven(unproven, mac, va.Status.VM.MACAddresses, bios) +
				"; such an Agent is never labelled or approved for this VM"
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, afv1.ReasonHostIdentityUnproven, msg, va.Generation)
		case va.Status.VM.AgentName != "":
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, afv1.ReasonAgentMissing, "Agent "+va.Status.VM.AgentName+" no longer exists", va.Generation)
		default:
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, afv1.ReasonAwaitingRegistration, "waiting for the VM to boot the discovery ISO and register", va.Generation)
		}
		r.announceUnproven(s, unproven, prevMsg, mac, bios)
		return true, nil
	}
	sort.Slice(proven, func(i, j int) bool {
		return proven[i].Obj.GetCreationTimestamp().After(proven[j].Obj.GetCreationTimestamp().Time)
	})
	a := proven[0]
	s.agent = &a
	va.Status.VM.AgentName = a.Name // shown by the AgentRegistered condition; no Event (one API write per VM)
	msg := "registered as Agent " + a.Name
	if len(unproven) > 0 {
		msg += "; ignored: " + describeUnproven(unproven, mac, va.Status.VM.MACAddresses, bios)
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, true, afv1.ReasonAgentRegistered, msg, va.Generation)
	r.announceUnproven(s, unproven, prevMsg, mac, bios)
	return true, nil
}

// announceUnproven records one Event per change of what the AgentRegistered condition says about
// Agents that match the VM by MAC or serial alone (an Agent waiting for its inventory is not announced
// again at every pass), once the status saying it is written. Normal while they only lack a serial,
// Warning when one contradicts the VM's identity.
func (r *Reconciler) announceUnproven(s *vmScope, unproven []agents.Agent, prevMsg, mac, bios string) {
	va := s.va
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentRegistered)
	if len(unproven) == 0 || c == nil || c.Message == prevMsg {
		return
	}
	eventType := "Normal"
	for _, a := range unproven {
		if a.ProofOfHostWith(mac, va.Status.VM.MACAddresses, bios) != agents.MACNoSerial {
			eventType = "Warning"
		}
	}
	msg := c.Message
	s.afterWrite = append(s.afterWrite, func() {
		r.Recorder.Eventf(va, nil, eventType, afv1.ReasonHostIdentityUnproven, events.ActionAwaitAgent, "%s", msg)
	})
}

// maxShownSerial bounds how much of a reported serial number (text the registering host chose) a
// message repeats.
const maxShownSerial = 64

// describeUnproven says, sorted by name so that it is the same from pass to pass, why each Agent does
// not prove it is the VM's host.
func describeUnproven(list []agents.Agent, mac string, vmMACs []string, bios string) string {
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	out := make([]string, 0, len(list))
	for _, a := range list {
		serial := a.Serial
		if len(serial) > maxShownSerial {
			serial = serial[:maxShownSerial] + "..."
		}
		var why string
		switch a.ProofOfHostWith(mac, vmMACs, bios) {
		case agents.ForeignNIC:
			why = fmt.Sprintf("reports the VM's MAC and serial number but also interface(s) %s, none of the VM's NICs (%s)",
				strings.Join(a.ForeignMACs(vmMACs), ", "), strings.Join(vmMACs, ", "))
		case agents.MACNoSerial:
			if a.Serial == "" {
				why = "reports the VM's MAC " + agents.NormalizeMAC(mac) + " but no serial number yet (waiting for its inventory)"
			} else {
				why = fmt.Sprintf("reports the VM's MAC %s but serial number %q, not a VMware serial", agents.NormalizeMAC(mac), serial)
			}
		case agents.MACOtherSerial:
			if agents.NormalizeUUID(bios) == "" {
				why = "reports the VM's MAC " + agents.NormalizeMAC(mac) + " but the VM's BIOS UUID is not recorded, so its serial cannot be checked"
			} else {
				why = fmt.Sprintf("reports the VM's MAC %s but serial number %q, another machine's (the VM's is %s)", agents.NormalizeMAC(mac), serial, agents.SerialFromBIOSUUID(bios))
			}
		case agents.SerialNoMAC:
			why = "reports the VM's serial number but not its MAC " + agents.NormalizeMAC(mac)
		}
		out = append(out, "Agent "+a.Name+" "+why)
	}
	return strings.Join(out, "; ")
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
	role := poolspec.Role(pool)
	topology := poolspec.TopologyLabels(pool, va.Spec.FailureDomain)
	// The pool's labels, then this VM's own label, then its failure domain's topology labels.
	wantLabels := poolspec.AgentLabels(pool)
	wantLabels[afv1.LabelVsphereAgent] = va.Name
	wantLabels = labels.Merge(wantLabels, topology)
	approve := pool.Spec.Agent.Approve == nil || *pool.Spec.Agent.Approve
	patch := map[string]any{}
	labelPatch := map[string]any{}
	for k, v := range wantLabels {
		if a.Labels[k] != v {
			labelPatch[k] = v
		}
	}
	pin, err := r.pinFor(ctx, a, pool)
	if err != nil {
		return false, err
	}
	if pin != a.Labels[afv1.LabelUpstreamAgentMachine] {
		if pin == "" {
			labelPatch[afv1.LabelUpstreamAgentMachine] = nil // merge patch: remove the stale pin
		} else {
			labelPatch[afv1.LabelUpstreamAgentMachine] = pin
		}
	}
	if len(labelPatch) > 0 {
		patch["metadata"] = map[string]any{"labels": labelPatch}
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
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentPrepared, true, afv1.ReasonAgentPrepared,
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
