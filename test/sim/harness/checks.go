package harness

import (
	"fmt"
	"sort"
	"strings"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// LiveMachines counts the NodePool's Machines that are not being deleted.
func (s *Snapshot) LiveMachines() int {
	n := 0
	for _, m := range s.Machines {
		if !m.Deleting {
			n++
		}
	}
	return n
}

// ScaledUp reports whether there are n Machines, none waiting, n bound Agents, n VMs in the simulator and
// n VsphereAgents.
func (s *Snapshot) ScaledUp(n int) bool {
	return s.LiveMachines() == n && s.WaitingMachines() == 0 && s.BoundAgents() == n && len(s.VMs) == n && len(s.VAs) == n
}

// ScaledDown reports ScaledUp(n), no deleting Machine left, and exactly n Agents (the surplus ones deleted).
func (s *Snapshot) ScaledDown(n int) bool {
	return s.ScaledUp(n) && len(s.Machines) == n && len(s.Agents) == n
}

// Installed counts the pool's Agents reporting Installed=True.
func (s *Snapshot) Installed() int {
	n := 0
	for _, a := range s.Agents {
		if a.Installed {
			n++
		}
	}
	return n
}

// EjectedNow counts VMs whose VsphereAgent reports Ejected and whose simulator CD-ROM is disconnected.
func (s *Snapshot) EjectedNow() int {
	n := 0
	for i := range s.VAs {
		va := &s.VAs[i]
		if vm := s.VMByInstanceUUID(string(va.UID)); vm != nil && EjectionReason(va) == afv1.ReasonEjected && !ISOAttached(vm) {
			n++
		}
	}
	return n
}

// EjectedButAttached lists VsphereAgents that report Ejected while the simulator VM still has the ISO connected.
func (s *Snapshot) EjectedButAttached() []string {
	var out []string
	for i := range s.VAs {
		va := &s.VAs[i]
		if vm := s.VMByInstanceUUID(string(va.UID)); vm != nil && EjectionReason(va) == afv1.ReasonEjected && ISOAttached(vm) {
			out = append(out, va.Name)
		}
	}
	return out
}

// EjectionReasons summarises the VsphereAgents' ISOEjected reasons, e.g. "ISOEjected: 5× WaitingForInstallation".
func (s *Snapshot) EjectionReasons() string {
	counts := map[string]int{}
	for i := range s.VAs {
		r := EjectionReason(&s.VAs[i])
		if r == "" {
			r = "no ISOEjected condition"
		}
		counts[r]++
	}
	var parts []string
	for r, c := range counts {
		parts = append(parts, fmt.Sprintf("%d× %s", c, r))
	}
	sort.Strings(parts)
	return "ISOEjected: " + strings.Join(parts, ", ")
}

// Describe is a one-line state for failure messages.
func (s *Snapshot) Describe() string {
	return fmt.Sprintf("%d VMs in the simulator, %d VsphereAgents, %d Agents (%d bound, %d installed), %d Machines (%d live, %d waiting); pool status waiting=%d vms=%d",
		len(s.VMs), len(s.VAs), len(s.Agents), s.BoundAgents(), s.Installed(), len(s.Machines), s.LiveMachines(), s.WaitingMachines(),
		s.Pool.Status.WaitingAgentMachines, s.Pool.Status.VMs)
}
