package planner

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"fmt"
	"sort"
	"time"
)

// vmState is what the capacity step needs to know about one of the pool's VMs: its one lifecycle state
// (see Lifecycle, after the abandoned and outdated rules) and its age.
type vmState struct {
	Name  string
	State VMLifecycle
	// CreatedAt orders surplus removal (newest first).
	CreatedAt time.Time
	// Ready: Available and its Agent is suitable for the provider (validated, connected, approved).
	Ready bool
	// Absent: its VM is recorded as destroyed or never created (see MayHaveVM): no longer counted.
	Absent bool
}

// capacityInput is what the capacity step counts.
type capacityInput struct {
	Waiting, ForeignAvailable, PendingCreates int
	VMs                                       []vmState
	MaxVMs, MaxConcurrentProvisioning         *int32
	Paused, RemoveSurplus                     bool
	// Standby is spec.standby: VMs of ours kept free beyond what waiting demand takes.
	Standby int
	// BlockReason stops creation ("" when creation may go on).
	BlockReason string
	// Probe: the registration breaker's hold is over and one VM at a time probes the image.
	Probe bool
	// DomainOf maps VM names to their failure domain; surplus is taken from the most populated domain
	// first (zones.go). Nil when the pool has no failure domains.
	DomainOf map[string]string
}

// capacity is the capacity step's outcome.
type capacity struct {
	Deficit, Create int
	// Immediate is the part of Create that refills the standby: created at once, never debounced.
	Immediate int
	// StandbyShort is how many VMs the standby lacks beyond Deficit; StandbyReady how many standby
	// Agents are ready; StandbyLimit the cap that leaves the standby short (MaxVMsReached), "" if none.
	StandbyShort, StandbyReady int
	StandbyLimit               string
	Release                    []Release
	Actions                    []Action
	// released lists VMs whose Agent was unbound after use; removed under Delete.
	released []string
	// Counts for status.
	InFlight, Available, InUse, Failed int
}

// computeCapacity plans the pool's size:
// deficit = waiting − suitable unbound Agents − VMs in flight, floor 0, capped by the limits; maxVMs
// counts every VM that may exist in vCenter, whatever its state.
// Surplus = our available VMs (and in-flight ones) beyond what waiting demand needs; never VMs in use.
func computeCapacity(in capacityInput) capacity {
	var p capacity
	total := in.PendingCreates
	ready := 0
	for _, vm := range in.VMs {
		switch vm.State {
		case VMReleasing, VMFailed:
			// Neither capacity nor supply, but their VMs exist in vCenter until destroyed (a destroy held
			// by a backup snapshot or a vCenter fault, a Machine still deleting): maxVMs counts them.
			if vm.State == VMFailed {
				p.Failed++
			}
			if !vm.Absent {
				total++
			}
			continue
		case VMReleased:
			// Still a VM until destroyed: counts against maxVMs, never as supply.
			p.released = append(p.released, vm.Name)
		case VMInUse:
			p.InUse++
		case VMAvailable:
			p.Available++
			if vm.Ready {
				ready++
			}
		case VMInFlight:
			p.InFlight++
		}
		total++
	}
	inFlight := p.InFlight + in.PendingCreates
	// Waiting demand takes foreign Agents first, then ours; the standby is what of ours is left over.
	ours := p.Available + inFlight
	needDemand := max(in.Waiting-in.ForeignAvailable, 0)
	deficit := max(needDemand-ours, 0)
	p.Deficit = deficit
	want := max(needDemand+in.Standby-ours, 0) // demand and standby together
	p.StandbyShort = want - deficit
	// Counted standby first, so a burst's debounce never holds back a standby refill and the refill
	// never steals the burst's batch.
	p.Immediate = min(want, max(in.Standby-ours, 0))
	p.StandbyReady = min(in.Standby, max(ready-needDemand, 0))

	if in.Paused {
		p.Actions = append(p.Actions, Action{Kind: ActionWait, Reason: afv1.ReasonPaused, Message: "spec.paused is true: no VM is created or removed"})
		return p
	}
	if in.RemoveSurplus {
		for _, name := range p.released {
			p.release(Release{Name: name, Reason: afv1.ReasonReleased, Message: "the VM's Agent was unbound after scale-down"})
		}
	}

	if want > 0 {
		create := want
		if in.BlockReason != "" {
			p.Actions = append(p.Actions, Action{Kind: ActionRefuse, Reason: in.BlockReason,
				Message: fmt.Sprintf("%d VM(s) needed, creation stopped", want)})
			create = 0
		}
		if in.MaxVMs != nil {
			capped := p.capBy(create, int(*in.MaxVMs), total, afv1.ReasonMaxVMsReached,
				fmt.Sprintf("%d VM(s) needed, limits.maxVMs %d", want, *in.MaxVMs))
			if capped < create && p.StandbyShort > 0 {
				p.StandbyLimit = afv1.ReasonMaxVMsReached
			}
			create = capped
		}
		if in.MaxConcurrentProvisioning != nil {
			create = p.capBy(create, int(*in.MaxConcurrentProvisioning), inFlight, afv1.ReasonMaxConcurrentProvisioningReached,
				fmt.Sprintf("%d VM(s) in flight, limits.maxConcurrentProvisioning %d", inFlight, *in.MaxConcurrentProvisioning))
		}
		if in.Probe {
			create = p.capBy(create, 1, inFlight, afv1.ReasonRegistrationProbing,
				fmt.Sprintf("%d VM(s) in flight; the registration breaker's hold is over and one VM at a time probes the image", inFlight))
		}
		p.Create = create
		p.Immediate = min(p.Immediate, create)
		if create > 0 {
			reason := afv1.ReasonNoSuitableAgents
			if deficit == 0 {
				reason = afv1.ReasonStandbyFilling
			}
			standby := ""
			if in.Standby > 0 {
				standby = fmt.Sprintf(", standby %d", in.Standby)
			}
			p.Actions = append(p.Actions, Action{Kind: ActionCreate, Reason: reason,
				Message: fmt.Sprintf("%d AgentMachine(s) wait, %d Agent(s) free, %d VM(s) in flight%s: creating %d", in.Waiting, p.Available+in.ForeignAvailable, inFlight, standby, create)})
		}
		return p
	}

	// Surplus: capacity of ours beyond waiting demand and the standby. Foreign Agents count as supply
	// first, so ours are the ones released; the standby is never surplus while it is short.
	surplus := p.Available + p.InFlight - needDemand - in.Standby
	if surplus <= 0 {
		return p
	}
	if !in.RemoveSurplus {
		p.Actions = append(p.Actions, Action{Kind: ActionWait, Reason: afv1.ReasonRetainPolicy,
			Message: fmt.Sprintf("%d VM(s) not needed; cleanupPolicy Retain keeps them", surplus)})
		return p
	}
	msg := "no AgentMachine waits for this VM's Agent"
	if in.Standby > 0 {
		msg = fmt.Sprintf("no AgentMachine waits for this VM's Agent and the standby of %d is full", in.Standby)
	}
	for _, name := range pickSurplus(in.VMs, surplus, in.DomainOf) {
		p.release(Release{Name: name, Reason: afv1.ReasonSurplus, Message: msg})
	}
	return p
}

// release records a release and its planned Delete action.
func (p *capacity) release(r Release) {
	p.Release = append(p.Release, r)
	p.Actions = append(p.Actions, r.action())
}

// capBy limits create to the room a limit leaves (limit − used, floor 0), recording why when it bites.
func (p *capacity) capBy(create, limit, used int, reason, situation string) int {
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
	p.Actions = append(p.Actions, Action{Kind: ActionWait, Reason: reason, Message: fmt.Sprintf("%s allows %d more", situation, room)})
	return room
}

// pickSurplus chooses which VMs to release: in-flight ones before registered ones (a registered,
// free Agent is the fastest capacity if demand comes back), newest first.
func pickSurplus(vms []vmState, n int, domainOf map[string]string) []string {
	var cands []vmState
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
