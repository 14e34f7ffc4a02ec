package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/bindable"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Snapshot is one consistent-enough look at a pool: the API objects, the simulator's VMs carrying the
// pool's ownership marker, and the operator's Events. Everything is read fresh (no cache).
type Snapshot struct {
	At   time.Time
	Pool *afv1.VsphereAgentPool
	// VAs are the pool's VsphereAgents, by name.
	VAs []afv1.VsphereAgent
	// VMs are the simulator VMs whose ownership marker names the pool, by name.
	VMs []vsphere.VMInfo
	// Agents are the Agents labelled for the pool (by the operator), by name.
	Agents []AgentView
	// Machines are the NodePool's Machines (when a world driver was given).
	Machines []world.MachineView
	// Events are the operator's Events about the pool and its VsphereAgents, oldest first.
	Events []corev1.Event
}

// AgentView is what the demo needs of one Agent.
type AgentView struct {
	Name         string
	AgentMachine string // agentMachineRef label: bound when set
	Installed    bool
	// VsphereAgent is the operator's label naming the VM's VsphereAgent.
	VsphereAgent string
	// IPv4 is the inventory's addresses (static-IP pools).
	IPv4 []string
	// Zone is the topology.kubernetes.io/zone label; NodeZone the same key of spec.nodeLabels.
	Zone, NodeZone string
	// Selectable: the Agent CAPI provider could bind it now (bindable.Agent: no agentMachineRef, approved,
	// Validated=True, Connected=True, Bound=False); a ready standby Agent is Selectable.
	Selectable bool
}

// Observe reads a Snapshot of pool. nodePool and d are optional (Machines stay empty without them).
func (h *Harness) Observe(ctx context.Context, pool types.NamespacedName, d *world.Driver, nodePool types.NamespacedName) (*Snapshot, error) {
	s := &Snapshot{At: time.Now(), Pool: &afv1.VsphereAgentPool{}}
	if err := h.Client.Get(ctx, pool, s.Pool); err != nil {
		return nil, fmt.Errorf("reading pool %s: %w", pool, err)
	}
	var vas afv1.VsphereAgentList
	if err := h.Client.List(ctx, &vas, client.InNamespace(pool.Namespace), client.MatchingLabels{afv1.LabelPool: pool.Name}); err != nil {
		return nil, err
	}
	s.VAs = vas.Items
	sort.Slice(s.VAs, func(i, j int) bool { return s.VAs[i].Name < s.VAs[j].Name })

	vms, err := h.VSphere.ListPoolVMs(ctx, vcsim.Datacenter, string(s.Pool.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the pool's VMs in the simulator: %w", err)
	}
	s.VMs = vms
	sort.Slice(s.VMs, func(i, j int) bool { return s.VMs[i].Name < s.VMs[j].Name })

	agents := &unstructured.UnstructuredList{}
	agents.SetGroupVersionKind(world.AgentGVK.GroupVersion().WithKind("AgentList"))
	if err := h.Client.List(ctx, agents, client.InNamespace(pool.Namespace), client.MatchingLabels{afv1.LabelPool: pool.Name}); err != nil {
		return nil, err
	}
	for _, a := range agents.Items {
		nodeLabels, _, _ := unstructured.NestedStringMap(a.Object, "spec", "nodeLabels")
		s.Agents = append(s.Agents, AgentView{Name: a.GetName(), AgentMachine: a.GetLabels()[world.LabelAgentMachineRef], Installed: unstructuredcond.IsTrue(&a, world.CondInstalled),
			VsphereAgent: a.GetLabels()[afv1.LabelVsphereAgent], Zone: a.GetLabels()[afv1.LabelTopologyZone], NodeZone: nodeLabels[afv1.LabelTopologyZone],
			IPv4: inventoryIPv4(&a), Selectable: bindable.Agent(&a)})
	}
	sort.Slice(s.Agents, func(i, j int) bool { return s.Agents[i].Name < s.Agents[j].Name })

	if d != nil && nodePool.Name != "" {
		if s.Machines, err = d.Observe(ctx, nodePool); err != nil {
			return nil, err
		}
	}

	var events corev1.EventList
	if err := h.Client.List(ctx, &events, client.InNamespace(pool.Namespace)); err != nil {
		return nil, err
	}
	for _, e := range events.Items {
		if k := e.InvolvedObject.Kind; k == "VsphereAgentPool" || k == "VsphereAgent" {
			s.Events = append(s.Events, e)
		}
	}
	sort.SliceStable(s.Events, func(i, j int) bool { return EventTime(&s.Events[i]).Before(EventTime(&s.Events[j])) })
	return s, nil
}

// EventTime is an Event's latest occurrence.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// BoundAgents counts the pool's Agents bound to an AgentMachine.
func (s *Snapshot) BoundAgents() int {
	n := 0
	for _, a := range s.Agents {
		if a.AgentMachine != "" {
			n++
		}
	}
	return n
}

// WaitingMachines counts the NodePool's Machines whose AgentMachine waits for an Agent.
func (s *Snapshot) WaitingMachines() int {
	n := 0
	for _, m := range s.Machines {
		if m.Waiting && !m.Deleting {
			n++
		}
	}
	return n
}

// VMByInstanceUUID returns the simulator VM of a VsphereAgent (its instance UUID is the VA's UID).
func (s *Snapshot) VMByInstanceUUID(uuid string) *vsphere.VMInfo {
	for i := range s.VMs {
		if strings.EqualFold(s.VMs[i].InstanceUUID, uuid) {
			return &s.VMs[i]
		}
	}
	return nil
}

// ISOAttached reports whether a simulator VM still has a connected ISO-backed CD-ROM.
func ISOAttached(vm *vsphere.VMInfo) bool {
	for _, c := range vm.CDROMs {
		if c.ISOPath != "" && c.Connected {
			return true
		}
	}
	return false
}

// EjectionReason is the VsphereAgent's ISOEjected condition reason ("" when absent).
func EjectionReason(va *afv1.VsphereAgent) string {
	for _, c := range va.Status.Conditions {
		if c.Type == afv1.ConditionISOEjected {
			return c.Reason
		}
	}
	return ""
}

// Leaks lists the pool's VMs the operator lost track of: simulator VMs carrying the pool's marker
// whose instance UUID names no VsphereAgent, and more VMs than VsphereAgents.
func (s *Snapshot) Leaks() []string {
	uids := map[string]bool{}
	for _, va := range s.VAs {
		uids[strings.ToLower(string(va.UID))] = true
	}
	var out []string
	for _, vm := range s.VMs {
		if !uids[strings.ToLower(vm.InstanceUUID)] {
			out = append(out, fmt.Sprintf("VM %s (instance UUID %s) carries the pool's marker but has no VsphereAgent", vm.Name, vm.InstanceUUID))
		}
	}
	if len(s.VMs) > len(s.VAs) {
		out = append(out, fmt.Sprintf("%d VMs in the simulator but only %d VsphereAgents", len(s.VMs), len(s.VAs)))
	}
	return out
}
