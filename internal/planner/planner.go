// Package planner decides, as pure functions over observed state, how many VMs a pool creates and
// which of its VMs are surplus. The pool controller gathers the inputs and carries out the plan.
package planner

import (
	"fmt"
	"sort"
	"time"
)

// VMState is what the planner needs to know about one of the pool's VMs (one VsphereAgent): its one
// lifecycle state (see Lifecycle) and its age.
type VMState struct {
	Name  string
	State VMLifecycle
	// CreatedAt orders surplus removal (newest first).
	CreatedAt time.Time
}

// Input is everything a pass observed.
type Input struct {
	// Waiting counts AgentMachines waiting with NoSuitableAgents (owner Machine present, not deleting).
	Waiting int
	// ForeignAvailable counts suitable unbound Agents matching the pool's labels that are not ours.
	ForeignAvailable int
	// VMs are the pool's VMs as listed.
	VMs []VMState
	// PendingCreates are creations issued but not yet seen in the cache (expectations).
	PendingCreates int
	// MaxVMs caps the VMs of the pool (nil: no cap).
	MaxVMs *int32
	// MaxConcurrentProvisioning caps VMs in flight (nil: no cap).
	MaxConcurrentProvisioning *int32
	// Paused stops every action.
	Paused bool
	// CreateBlocked stops creation (e.g. registration keeps failing, ISO not ready); BlockReason says why.
	CreateBlocked bool
	BlockReason   string
	// RemoveSurplus is true under cleanupPolicy Delete.
	RemoveSurplus bool
	// DomainOf maps VM names to their failure domain; surplus is taken from the most populated domain
	// first (zones.go). Nil when the pool has no failure domains.
	DomainOf map[string]string
}

// Action is one decision with its reason.
type Action struct {
	Kind    string // Create, Delete, Wait, Refuse
	Target  string
	Reason  string
	Message string
}

// Plan is the outcome.
type Plan struct {
	Deficit int
	Create  int
	Release []string
	Actions []Action
	// Released lists VMs whose Agent was unbound after use; removed under Delete.
	Released []string
	// Counts for status.
	InFlight, Available, InUse, Failed int
}

// Reasons.
const (
	ReasonDemand            = "NoSuitableAgents"
	ReasonMaxVMs            = "MaxVMsReached"
	ReasonMaxConcurrent     = "MaxConcurrentProvisioningReached"
	ReasonPaused            = "Paused"
	ReasonSurplus           = "Surplus"
	ReasonReleased          = "Released"
	ReasonRetainPolicy      = "RetainPolicy"
	ReasonCapacitySatisfied = "CapacitySatisfied"
)

// Compute plans one pass:
// deficit = waiting − suitable unbound Agents − VMs in flight, floor 0, capped by the limits.
// Surplus = our available VMs (and in-flight ones) beyond what waiting demand needs; never VMs in use.
func Compute(in Input) Plan {
	var p Plan
	total := in.PendingCreates
	for _, vm := range in.VMs {
		switch vm.State {
		case VMReleasing:
			continue
		case VMFailed:
			p.Failed++
			continue
		case VMReleased:
			// Still a VM until destroyed: counts against maxVMs, never as supply.
			p.Released = append(p.Released, vm.Name)
		case VMInUse:
			p.InUse++
		case VMAvailable:
			p.Available++
		case VMInFlight:
			p.InFlight++
		}
		total++
	}
	inFlight := p.InFlight + in.PendingCreates
	supply := p.Available + in.ForeignAvailable + inFlight
	deficit := in.Waiting - supply
	if deficit < 0 {
		deficit = 0
	}
	p.Deficit = deficit

	if in.Paused {
		p.Actions = append(p.Actions, Action{Kind: "Wait", Reason: ReasonPaused, Message: "spec.paused is true: no VM is created or removed"})
		return p
	}
	if in.RemoveSurplus {
		for _, name := range p.Released {
			p.Release = append(p.Release, name)
			p.Actions = append(p.Actions, Action{Kind: "Delete", Target: name, Reason: ReasonReleased,
				Message: "the VM's Agent was unbound after scale-down"})
		}
	}

	if deficit > 0 {
		create := deficit
		if in.CreateBlocked {
			p.Actions = append(p.Actions, Action{Kind: "Refuse", Reason: in.BlockReason,
				Message: fmt.Sprintf("%d VM(s) needed, creation stopped", deficit)})
			create = 0
		}
		if in.MaxVMs != nil {
			create = p.capBy(create, int(*in.MaxVMs), total, ReasonMaxVMs,
				fmt.Sprintf("%d VM(s) needed, limits.maxVMs %d", deficit, *in.MaxVMs))
		}
		if in.MaxConcurrentProvisioning != nil {
			create = p.capBy(create, int(*in.MaxConcurrentProvisioning), inFlight, ReasonMaxConcurrent,
				fmt.Sprintf("%d VM(s) in flight, limits.maxConcurrentProvisioning %d", inFlight, *in.MaxConcurrentProvisioning))
		}
		p.Create = create
		if create > 0 {
			p.Actions = append(p.Actions, Action{Kind: "Create", Reason: ReasonDemand,
				Message: fmt.Sprintf("%d AgentMachine(s) wait, %d Agent(s) free, %d VM(s) in flight: creating %d", in.Waiting, p.Available+in.ForeignAvailable, inFlight, create)})
		}
		return p
	}

	// Surplus: capacity of ours not needed by waiting demand. Foreign Agents count as supply first, so
	// ours are the ones released.
	need := in.Waiting - in.ForeignAvailable
	if need < 0 {
		need = 0
	}
	surplus := p.Available + p.InFlight - need
	if surplus <= 0 {
		return p
	}
	if !in.RemoveSurplus {
		p.Actions = append(p.Actions, Action{Kind: "Wait", Reason: ReasonRetainPolicy,
			Message: fmt.Sprintf("%d VM(s) not needed; cleanupPolicy Retain keeps them", surplus)})
		return p
	}
	picked := pickSurplus(in.VMs, surplus, in.DomainOf)
	p.Release = append(p.Release, picked...)
	for _, name := range picked {
		p.Actions = append(p.Actions, Action{Kind: "Delete", Target: name, Reason: ReasonSurplus,
			Message: "no AgentMachine waits for this VM's Agent"})
	}
	return p
}

// capBy limits create to the room a limit leaves (limit − used, floor 0), recording why when it bites.
func (p *Plan) capBy(create, limit, used int, reason, situation string) int {
	if create == 0 {
		return 0
	}
	room := limit - used
	if room < 0 {
		room = 0
	}
	if room >= create {
		return create
	}
	p.Actions = append(p.Actions, Action{Kind: "Wait", Reason: reason, Message: fmt.Sprintf("%s allows %d more", situation, room)})
	return room
}

// pickSurplus chooses which VMs to release: in-flight ones before registered ones (a registered,
// free Agent is the fastest capacity if demand comes back), newest first.
func pickSurplus(vms []VMState, n int, domainOf map[string]string) []string {
	var cands []VMState
	for _, vm := range vms {
		switch vm.State {
		case VMAvailable, VMInFlight:
			cands = append(cands, vm)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if inFlightI, inFlightJ := cands[i].State == VMInFlight, cands[j].State == VMInFlight; inFlightI != inFlightJ {
			return inFlightI
		}
		if !cands[i].CreatedAt.Equal(cands[j].CreatedAt) {
			return cands[i].CreatedAt.After(cands[j].CreatedAt)
		}
		return cands[i].Name < cands[j].Name
	})
	if len(domainOf) > 0 {
		return pickByPopulatedDomain(cands, n, vms, domainOf)
	}
	if n > len(cands) {
		n = len(cands)
	}
	out := make([]string, 0, n)
	for _, c := range cands[:n] {
		out = append(out, c.Name)
	}
	return out
}
