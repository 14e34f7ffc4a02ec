package main

import (
	"fmt"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/sim/harness"
)

// tracker accumulates what the demo saw across snapshots: the summary counts are the union over
// the whole run (a VM destroyed on scale-down was still created), taken from the simulator and the API.
type tracker struct {
	vmsSeen      map[string]string // instance UUID -> VM name, every VM ever seen with the pool's marker
	agentsBound  map[string]bool   // Agent names ever seen bound to an AgentMachine
	ejected      map[string]bool   // VsphereAgent names ever seen with ISOEjected reason Ejected
	ejectStarted bool              // some VsphereAgent reached EjectionInProgress or Ejected: the build ejects
	maxVMs       int
	// destroyedUnderDemand are VMs that vanished while AgentMachines were waiting (churn: the
	// operator released capacity the NodePool still needed, and will create it again).
	destroyedUnderDemand []string
	violations           []string
	last                 *harness.Snapshot
}

func newTracker() *tracker {
	return &tracker{vmsSeen: map[string]string{}, agentsBound: map[string]bool{}, ejected: map[string]bool{}}
}

func (t *tracker) observe(s *harness.Snapshot) {
	if prev := t.last; prev != nil && (prev.WaitingMachines() > 0 || s.WaitingMachines() > 0) {
		for _, vm := range prev.VMs {
			if s.VMByInstanceUUID(vm.InstanceUUID) == nil {
				t.destroyedUnderDemand = append(t.destroyedUnderDemand, vm.Name)
			}
		}
	}
	t.last = s
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
		switch harness.EjectionReason(&s.VAs[i]) {
		case afv1.ReasonEjected:
			t.ejected[s.VAs[i].Name] = true
			t.ejectStarted = true
		case afv1.ReasonEjectionInProgress:
			t.ejectStarted = true
		}
	}
}

func (t *tracker) violate(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.violations = append(t.violations, msg)
}

// created, cleanedUp: every VM ever seen, and those no longer in the simulator.
func (t *tracker) created() int { return len(t.vmsSeen) }

func (t *tracker) cleanedUp() int {
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

func (t *tracker) summary() string {
	return fmt.Sprintf("demo: %d VMs created, %d agents bound, %d ISOs ejected, %d VMs cleaned up, %d invariant violations",
		t.created(), len(t.agentsBound), len(t.ejected), t.cleanedUp(), len(t.violations))
}
