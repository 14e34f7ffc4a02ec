package harness

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// Warm standby (spec.standby, docs/standby.md) lets a plateau hold exactly `standby` VMs more than it has
// Machines: VMs that back no Machine and whose Agents the provider could bind at once. The checks here
// allow those and nothing else: a second VM for one Machine shows as one extra too many (or as two Agents
// serving one AgentMachine), an Agent reserved by two Machines as a VM bound twice.

// vmRole is one of the pool's simulator VMs and what it serves.
type vmRole struct {
	vm *vsphere.VMInfo
	// agent is the Agent assisted-service registered for the VM; nil before it registered.
	agent *AgentView
	// machines reserve the VM's Agent (live or being deleted).
	machines []string
	// hasVA: a VsphereAgent of the pool owns the VM.
	hasVA bool
}

// backing: the VM serves a Machine (its Agent is reserved by one, or bound to an AgentMachine).
func (r *vmRole) backing() bool {
	return len(r.machines) > 0 || (r.agent != nil && r.agent.AgentMachine != "")
}

// readyStandby: a VM of ours backing nothing whose Agent the provider would bind right now.
func (r *vmRole) readyStandby() bool {
	return !r.backing() && r.hasVA && r.agent != nil && r.agent.Selectable
}

// whyNotReady says what keeps an unbound VM from being a ready standby.
func (r *vmRole) whyNotReady() string {
	switch {
	case !r.hasVA:
		return "no VsphereAgent owns it"
	case r.agent == nil:
		return "its Agent has not registered"
	default:
		return "its Agent is not approved, Validated, Connected and Bound=False"
	}
}

// roles classifies the snapshot's VMs (in VM name order).
func (s *Snapshot) roles() []vmRole {
	agents := map[string]*AgentView{}
	for i := range s.Agents {
		agents[s.Agents[i].Name] = &s.Agents[i]
	}
	reservedBy := map[string][]string{}
	for _, m := range s.Machines {
		if _, agent, ok := strings.Cut(m.Agent, "/"); ok {
			reservedBy[agent] = append(reservedBy[agent], m.Name)
		}
	}
	vas := map[string]bool{}
	for i := range s.VAs {
		vas[strings.ToLower(string(s.VAs[i].UID))] = true
	}
	out := make([]vmRole, 0, len(s.VMs))
	for i := range s.VMs {
		vm := &s.VMs[i]
		name := world.AgentNameFor(vm.BIOSUUID)
		out = append(out, vmRole{vm: vm, agent: agents[name], machines: reservedBy[name], hasVA: vas[strings.ToLower(vm.InstanceUUID)]})
	}
	return out
}

// StandbyAgents names the Agents of the ready standby VMs: VMs of the pool that back no Machine, owned by
// a VsphereAgent, whose Agent the provider could bind (bindable.Agent).
func (s *Snapshot) StandbyAgents() []string {
	var out []string
	for _, r := range s.roles() {
		if r.readyStandby() {
			out = append(out, r.agent.Name)
		}
	}
	sort.Strings(out)
	return out
}

// StandbyReady counts the ready standby VMs (see StandbyAgents).
func (s *Snapshot) StandbyReady() int { return len(s.StandbyAgents()) }

// ScaledUpWithStandby is ScaledUp(n) on a pool keeping standby ready Agents: n live Machines, none
// waiting, n bound Agents, and n+standby VMs and VsphereAgents of which standby are ready standby VMs.
// With standby 0 it is ScaledUp(n).
func (s *Snapshot) ScaledUpWithStandby(n, standby int) bool {
	if standby == 0 {
		return s.ScaledUp(n)
	}
	return s.LiveMachines() == n && s.WaitingMachines() == 0 && s.BoundAgents() == n &&
		len(s.VMs) == n+standby && len(s.VAs) == n+standby && s.StandbyReady() == standby
}

// ScaledDownWithStandby is ScaledUpWithStandby, no deleting Machine left, and exactly n+standby Agents.
func (s *Snapshot) ScaledDownWithStandby(n, standby int) bool {
	return s.ScaledUpWithStandby(n, standby) && len(s.Machines) == n && len(s.Agents) == n+standby
}

// PlateauViolations checks a plateau of a pool keeping standby ready Agents: no AgentMachine served by two
// Agents (a second VM for one Machine), no Agent reserved by two Machines (one VM bound twice), and the VMs
// backing no Machine exactly the standby, each a ready standby VM. Standby 0 allows no such VM at all.
func (s *Snapshot) PlateauViolations(standby int) []string {
	var out []string
	perAM := map[string][]string{}
	for _, a := range s.Agents {
		if a.AgentMachine != "" {
			perAM[a.AgentMachine] = append(perAM[a.AgentMachine], a.Name)
		}
	}
	for _, am := range sortedKeys(perAM) {
		if agents := perAM[am]; len(agents) > 1 {
			out = append(out, fmt.Sprintf("AgentMachine %s is served by %d Agents (%s): a second VM for one Machine", am, len(agents), strings.Join(agents, ", ")))
		}
	}
	var extras []vmRole
	for _, r := range s.roles() {
		if len(r.machines) > 1 {
			out = append(out, fmt.Sprintf("VM %s: its Agent %s is reserved by %d Machines (%s): one VM bound twice",
				r.vm.Name, world.AgentNameFor(r.vm.BIOSUUID), len(r.machines), strings.Join(r.machines, ", ")))
		}
		if !r.backing() {
			extras = append(extras, r)
		}
	}
	if len(extras) > standby {
		names := make([]string, 0, len(extras))
		for _, r := range extras {
			names = append(names, r.vm.Name)
		}
		return append(out, fmt.Sprintf("%d VMs back no Machine (%s) but the standby allows %d: a duplicate VM, or a surplus kept",
			len(extras), strings.Join(names, ", "), standby))
	}
	for _, r := range extras {
		if !r.readyStandby() {
			out = append(out, fmt.Sprintf("VM %s backs no Machine and is not a ready standby: %s", r.vm.Name, r.whyNotReady()))
		}
	}
	if len(extras) < standby {
		out = append(out, fmt.Sprintf("standby short: %d of %d VMs back no Machine", len(extras), standby))
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// StandbyFigures are what a run with warm standby measured, for Summary.
type StandbyFigures struct {
	// Desired is spec.standby; ReadyBefore the ready standby VMs when the first scale-up began.
	Desired, ReadyBefore int
	// BoundFromStandby are the Agents of ReadyBefore the first scale-up bound, within BoundIn of it.
	BoundFromStandby int
	BoundIn          time.Duration
	// RefilledIn is the time from the first scale-up to Desired ready standby VMs again (0: not refilled).
	RefilledIn time.Duration
	// KeptAtScaleDown are the ready standby VMs after the scale-down.
	KeptAtScaleDown int
}

// SetStandby records a run's standby figures: Summary then adds them (after the cleanup figures).
func (t *Tracker) SetStandby(f StandbyFigures) { t.standby = &f }

// standbySummary is ", standby 2: 2 ready before the scale-up, 2 bound from standby in 0.5 s, refilled to
// 2 in 6.1 s, 2 kept at scale-down", or "" without standby.
func (t *Tracker) standbySummary() string {
	f := t.standby
	if f == nil || f.Desired == 0 {
		return ""
	}
	refill := "not refilled"
	if f.RefilledIn > 0 {
		refill = fmt.Sprintf("refilled to %d in %.1f s", f.Desired, f.RefilledIn.Seconds())
	}
	return fmt.Sprintf(", standby %d: %d ready before the scale-up, %d bound from standby in %.1f s, %s, %d kept at scale-down",
		f.Desired, f.ReadyBefore, f.BoundFromStandby, f.BoundIn.Seconds(), refill, f.KeptAtScaleDown)
}

// observeBindings records Agents seen bound to one AgentMachine and later to another: in this world a VM
// released after use is destroyed, never bound again (docs/standby.md), so a second binding is a VM reused.
func (t *Tracker) observeBindings(s *Snapshot) {
	for _, a := range s.Agents {
		if a.AgentMachine == "" {
			continue
		}
		first, ok := t.boundTo[a.Name]
		switch {
		case !ok:
			t.boundTo[a.Name] = a.AgentMachine
		case first != a.AgentMachine && !t.reboundSeen[a.Name]:
			t.reboundSeen[a.Name] = true
			t.rebound = append(t.rebound, fmt.Sprintf("Agent %s was bound to AgentMachine %s, later to %s", a.Name, first, a.AgentMachine))
		}
	}
}

// Rebound lists Agents seen bound to two AgentMachines over the run (each once).
func (t *Tracker) Rebound() []string { return t.rebound }
