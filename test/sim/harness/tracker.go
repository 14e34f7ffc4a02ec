package harness

import (
	"fmt"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Tracker accumulates what a scenario saw across snapshots: the counts are the union over the whole
// run (a VM destroyed on scale-down was still created), taken from the simulator and the API.
// Not safe for concurrent use.
type Tracker struct {
	vmsSeen      map[string]string // instance UUID -> VM name, every VM ever seen with the pool's marker
	agentsBound  map[string]bool   // Agent names ever seen bound to an AgentMachine
	ejected      map[string]bool   // VsphereAgent names ever seen with ISOEjected reason Ejected
	ejectStarted bool              // some VsphereAgent reached EjectionInProgress or Ejected: the build ejects
	maxVMs       int
	// destroyedUnderDemand are VMs that vanished while AgentMachines were waiting (churn: the
	// operator released capacity the NodePool still needed, and will create it again).
	destroyedUnderDemand []string
	violations           []string
	last                 *Snapshot
	// lockAnswers is how many CD-ROM lock questions the operator answered (counted by the simulator).
	lockAnswers int
	// zones are the pool's failure domains (SetZones); vmZone the domain of every VM ever seen.
	zones  []string
	vmZone map[string]string
	// staticIPs are the addresses ever leased to a created VM (nil: a DHCP scenario, not in Summary).
	staticIPs map[string]bool
	// isoTransport says how the ISO was fetched (SetISOTransport; empty: not in Summary).
	isoTransport string
	// boundTo is the AgentMachine each Agent was first seen bound to; rebound the Agents later seen bound
	// to another (reboundSeen: each once).
	boundTo     map[string]string
	reboundSeen map[string]bool
	rebound     []string
	// standby are the warm standby figures (SetStandby; nil: not in Summary).
	standby *StandbyFigures
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{vmsSeen: map[string]string{}, agentsBound: map[string]bool{}, ejected: map[string]bool{}, vmZone: map[string]string{},
		boundTo: map[string]string{}, reboundSeen: map[string]bool{}}
}

// Observe records a snapshot.
func (t *Tracker) Observe(s *Snapshot) {
	if prev := t.last; prev != nil && (prev.WaitingMachines() > 0 || s.WaitingMachines() > 0) {
		for _, vm := range prev.VMs {
			if s.VMByInstanceUUID(vm.InstanceUUID) == nil {
				t.destroyedUnderDemand = append(t.destroyedUnderDemand, fmt.Sprintf("%s (before: %d AgentMachines waiting, pool status waiting=%d available=%d bound=%d vms=%d; after: %d waiting; %s)",
					vm.Name, prev.WaitingMachines(), prev.Pool.Status.WaitingAgentMachines, prev.Pool.Status.AvailableAgents, prev.Pool.Status.BoundAgents,
					prev.Pool.Status.VMs, s.WaitingMachines(), releaseEvent(s, vm.Name)))
			}
		}
	}
	t.last = s
	t.observeStaticIPs(s)
	t.observeBindings(s)
	for _, vm := range s.VMs {
		t.vmsSeen[strings.ToLower(vm.InstanceUUID)] = vm.Name
	}
	if len(s.VMs) > t.maxVMs {
		t.maxVMs = len(s.VMs)
	}
	for _, a := range s.Agents {
		if a.AgentMachine != "" {
			t.agentsBound[a.Name] = true
		}
	}
	for i := range s.VAs {
		if uuid := s.VAs[i].Status.VM.InstanceUUID; uuid != "" {
			t.vmZone[strings.ToLower(uuid)] = s.VAs[i].Spec.FailureDomain
		}
		switch EjectionReason(&s.VAs[i]) {
		case afv1.ReasonEjected:
			t.ejected[s.VAs[i].Name] = true
			t.ejectStarted = true
		case afv1.ReasonEjectionInProgress:
			t.ejectStarted = true
		}
	}
}

// Violate records an invariant violation.
func (t *Tracker) Violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.violations = append(t.violations, msg)
}

// Created counts every VM ever seen with the pool's marker.
func (t *Tracker) Created() int { return len(t.vmsSeen) }

// CleanedUp counts VMs seen once and no longer in the simulator.
func (t *Tracker) CleanedUp() int {
	present := map[string]bool{}
	if t.last != nil {
		for _, vm := range t.last.VMs {
			present[strings.ToLower(vm.InstanceUUID)] = true
		}
	}
	n := 0
	for uuid := range t.vmsSeen {
		if !present[uuid] {
			n++
		}
	}
	return n
}

// Summary is the one-line result, e.g. "demo: 5 VMs created, ... 0 invariant violations".
func (t *Tracker) Summary(prefix string) string {
	iso := ""
	if t.isoTransport != "" {
		iso = t.isoTransport + ", "
	}
	return fmt.Sprintf(prefix+": %d VMs created, %d agents bound, %d ISOs ejected (%d lock questions answered), %d VMs cleaned up%s%s, %s%s%d invariant violations",
		t.Created(), len(t.agentsBound), len(t.ejected), t.lockAnswers, t.CleanedUp(), t.spread(), t.standbySummary(), t.staticIPSummary(), iso, len(t.violations))
}

// SetISOTransport records how the ISO was fetched, e.g. "ISO over HTTPS (private CA via injected
// bundle)": Summary adds it before the violation count.
func (t *Tracker) SetISOTransport(s string) { t.isoTransport = s }

// SetZones names the pool's failure domains: Summary then reports how the created VMs spread over them.
func (t *Tracker) SetZones(zones []string) { t.zones = zones }

// Spread counts the VMs ever created per failure domain, in the order of SetZones.
func (t *Tracker) Spread() []int {
	out := make([]int, len(t.zones))
	for uuid := range t.vmsSeen {
		for i, z := range t.zones {
			if t.vmZone[uuid] == z {
				out[i]++
			}
		}
	}
	return out
}

// spread is ", spread 2/2/1 over 3 zones" with zones set, else "".
func (t *Tracker) spread() string {
	if len(t.zones) == 0 {
		return ""
	}
	parts := make([]string, 0, len(t.zones))
	for _, n := range t.Spread() {
		parts = append(parts, fmt.Sprint(n))
	}
	return fmt.Sprintf(", spread %s over %d zones", strings.Join(parts, "/"), len(t.zones))
}

// SetLockQuestionsAnswered records how many CD-ROM lock questions were answered (for Summary).
func (t *Tracker) SetLockQuestionsAnswered(n int) { t.lockAnswers = n }

// Last is the latest snapshot (nil before the first).
func (t *Tracker) Last() *Snapshot { return t.last }

// AgentsBound counts Agents ever seen bound; Ejected VsphereAgents ever seen with ISOEjected=Ejected.
func (t *Tracker) AgentsBound() int { return len(t.agentsBound) }

// Ejected counts VsphereAgents ever seen with ISOEjected reason Ejected.
func (t *Tracker) Ejected() int { return len(t.ejected) }

// EjectStarted reports whether any VsphereAgent reached EjectionInProgress or Ejected (the build ejects).
func (t *Tracker) EjectStarted() bool { return t.ejectStarted }

// MaxVMs is the most VMs with the pool's marker seen at one time.
func (t *Tracker) MaxVMs() int { return t.maxVMs }

// DestroyedUnderDemand lists VMs that vanished while AgentMachines were waiting.
func (t *Tracker) DestroyedUnderDemand() []string { return t.destroyedUnderDemand }

// Violations are the recorded invariant violations.
func (t *Tracker) Violations() []string { return t.violations }

// releaseEvent quotes the operator's VMReleased Event for a VM, if any.
func releaseEvent(s *Snapshot, vm string) string {
	for i := len(s.Events) - 1; i >= 0; i-- {
		if e := &s.Events[i]; e.Reason == "VMReleased" && strings.Contains(e.Message, vm) {
			return fmt.Sprintf("event VMReleased %q at %s", e.Message, EventTime(e).Format("15:04:05"))
		}
	}
	return "no VMReleased event"
}
