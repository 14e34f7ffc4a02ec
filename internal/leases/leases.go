// Package leases holds the pure rules of static addressing: MACs from VMware's static range, the view of
// a lease (a Cluster API IPAddressClaim with its IPAddress and NMStateConfig), the nmstate document a
// lease puts into the discovery image, and the ordering rule that keeps a VM from booting an image that
// does not carry its configuration.
package leases

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

// VMware accepts manually assigned MACs only in 00:50:56:00:00:00 - 00:50:56:3F:FF:FF.
const (
	staticPrefix = "00:50:56"
	staticSpace  = 0x400000 // the 22 low bits of the last three octets
)

// IsStaticMAC reports whether mac lies in VMware's static range.
func IsStaticMAC(mac string) bool {
	m := strings.ToLower(mac)
	if len(m) != 17 || !strings.HasPrefix(m, staticPrefix+":") {
		return false
	}
	var a, b, c int
	if _, err := fmt.Sscanf(m[9:], "%02x:%02x:%02x", &a, &b, &c); err != nil {
		return false
	}
	return a <= 0x3f
}

// ErrNoFreeMAC is returned when no unused MAC was found in the tries allowed.
var ErrNoFreeMAC = errors.New("no free MAC in VMware's static range")

// NewMAC picks a random MAC in VMware's static range that is not in used (lower-case keys). Random, not
// sequential: operators in other clusters (or a restored backup) drawing from the same range rarely meet.
func NewMAC(rng *rand.Rand, used sets.Set[string]) (string, error) {
	for range 64 {
		n := rng.IntN(staticSpace)
		mac := fmt.Sprintf("%s:%02x:%02x:%02x", staticPrefix, n>>16, (n>>8)&0xff, n&0xff)
		if !used.Has(mac) {
			return mac, nil
		}
	}
	return "", ErrNoFreeMAC
}

// Address is an address an IPAM provider handed out (an IPAddress's spec).
type Address struct {
	Address string
	Prefix  int32
	Gateway string
}

// CIDR is the address with its prefix ("10.0.0.21/24").
func (a Address) CIDR() string { return fmt.Sprintf("%s/%d", a.Address, a.Prefix) }

// ImageCarries is the ordering rule: an image created at imageCreated carries a config created at
// configCreated only if it was generated strictly later. Both are second-resolution API timestamps, so the
// same second proves nothing: wait for the next image.
func ImageCarries(imageCreated, configCreated time.Time) bool {
	if imageCreated.IsZero() || configCreated.IsZero() {
		return false
	}
	return imageCreated.Truncate(time.Second).After(configCreated.Truncate(time.Second))
}

// Selects reports whether an InfraEnv whose nmStateConfigLabelSelector.matchLabels is selector selects
// an NMStateConfig with labels (an empty selector selects nothing the operator writes).
func Selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// State is where a lease stands.
type State string

const (
	// StatePending means the claim waits for its address, or the address for its NMStateConfig.
	StatePending State = "Pending"
	// StateExhausted means the IPAM provider reports the pool exhausted for this claim.
	StateExhausted State = "Exhausted"
	// StateInvalid means the IPAM provider's address cannot work (ValidateAddress); no NMStateConfig is
	// written with it and it serves no VM.
	StateInvalid State = "Invalid"
	// StateReady means the NMStateConfig exists and the InfraEnv selects it; the lease is free for a VM.
	StateReady State = "Ready"
	// StateAssigned means a VsphereAgent holds the lease.
	StateAssigned State = "Assigned"
	// StateRetained means the VM was kept (cleanupPolicy Retain, or still backing a Machine); the lease stays with it.
	StateRetained State = "Retained"
	// StateReleased means the VM is gone; the lease is removed in the next batch.
	StateReleased State = "Released"
)

// Lease is the view of one lease.
type Lease struct {
	Name string
	MAC  string
	// Holder is the VsphereAgent holding the lease ("" when free).
	Holder string
	// Disposition is set when the holder was deleted: retained or released.
	Disposition State
	// AddressName is the claim's status.addressRef.name.
	AddressName string
	// Exhausted carries the provider's message when its Ready condition says PoolExhausted (the lease's
	// own claim, or one of its secondary claims that has no address).
	Exhausted string
	// ExhaustedPool names ("<Kind> <name>") the pool of an exhausted secondary claim ("" when it is the
	// lease's own claim that is exhausted).
	ExhaustedPool string
	// NICMACs are the MACs of the VM's other NICs with static addresses, by NIC index (1: the second NIC).
	NICMACs map[int]string
	// Secondaries are the lease's other claims (the other IPAM pools of its NICs), and Missing how many
	// of those the pool's spec wants that do not exist (yet).
	Secondaries []Secondary
	Missing     int
	// Shape names the NICs and pools the lease was made for (see the staticip package); a free lease of
	// another shape than the pool's current one is not handed out.
	Shape string
	// HasConfig and ConfigCreated describe the NMStateConfig.
	HasConfig     bool
	ConfigCreated time.Time
	// Selected: the NMStateConfig carries the InfraEnv's current nmStateConfigLabelSelector (Selects);
	// a config it does not select is not in any image generated from now on.
	Selected bool
	// Invalid says why the leased address was refused (ValidateAddress); "" when it was not.
	Invalid  string
	Deleting bool
	// ReleasedAt is when the holder's VM was confirmed destroyed (zero if unknown or not released).
	ReleasedAt time.Time
	// Claimed is when the claim was created.
	Claimed time.Time
}

// Secondary is one claim of a lease besides its own: the address of another IPAM pool of one of the
// VM's NICs (the first NIC's second pool, or a pool of another NIC).
type Secondary struct {
	// NIC is the NIC's index (0: the first NIC), Pool the pool's index in its addressesFromPools.
	NIC, Pool int
	// Claim names the IPAddressClaim, AddressName its status.addressRef.name ("" until served).
	Claim, AddressName string
}

// Complete reports whether the lease has all its addresses: its own and each secondary claim's.
func (l Lease) Complete() bool {
	if l.AddressName == "" || l.Missing > 0 {
		return false
	}
	for _, s := range l.Secondaries {
		if s.AddressName == "" {
			return false
		}
	}
	return true
}

// StateOf derives the lease's state.
func (l Lease) StateOf() State {
	switch {
	case l.Disposition == StateReleased || l.Disposition == StateRetained:
		return l.Disposition
	case l.Holder != "":
		return StateAssigned
	case l.Exhausted != "" && !l.Complete():
		return StateExhausted
	case l.Invalid != "":
		return StateInvalid
	case !l.Complete() || !l.HasConfig || !l.Selected:
		return StatePending
	}
	return StateReady
}

// active reports whether the lease counts towards the pool's leases: not being deleted, and neither
// released (removed in the next batch) nor retained (kept with a VM the pool no longer counts).
func (l Lease) active() bool {
	s := l.StateOf()
	return !l.Deleting && s != StateReleased && s != StateRetained
}

// Plan is what the pool does with its leases on one pass.
type Plan struct {
	// Create is how many new leases (claims) to create.
	Create int
	// Release are the leases to remove (NMStateConfig, then claim), all in this pass.
	Release []string
}

// Decide keeps wanted leases (every live VM holds or needs one, plus spares) and removes released ones;
// a pool exhausted at the IPAM provider gets no further claims. Spares beyond the target are Surplus's.
func Decide(all []Lease, liveVMs, newVMs, spare int) Plan {
	var p Plan
	active, exhausted := 0, false
	for _, l := range all {
		switch l.StateOf() {
		case StateReleased:
			if !l.Deleting {
				p.Release = append(p.Release, l.Name)
			}
		case StateExhausted:
			exhausted = true
		}
		if l.active() {
			active++
		}
	}
	want := liveVMs + newVMs + spare
	if !exhausted && want > active {
		p.Create = want - active
	}
	return p
}

// Surplus names the spare leases beyond the target (liveVMs + spare) to give back to the IPAM pool. Only
// once demand has settled: no VM about to be created, every live VM holding its lease, and each lease
// claimed at least settle ago (a burst's claims are not churned while the burst lands). Removal costs an
// image regeneration, so a surplus only comes from an overshoot (a retried create, a lagging cache): kept,
// it would hold an address for good. Leases still pending go first (no image carries them yet), then
// the newest ready ones; invalid and exhausted claims stay (no claim churn against a misconfigured pool).
func Surplus(all []Lease, liveVMs, newVMs, spare int, now time.Time, settle time.Duration) []string {
	if newVMs > 0 {
		return nil
	}
	active, held := 0, 0
	var candidates []Lease
	for _, l := range all {
		if !l.active() {
			continue
		}
		active++
		switch l.StateOf() {
		case StateAssigned:
			held++
		case StatePending, StateReady:
			if now.Sub(l.Claimed) < settle {
				return nil // a burst's claims are still landing
			}
			candidates = append(candidates, l)
		}
	}
	surplus := active - (liveVMs + spare)
	if surplus <= 0 || held < liveVMs {
		return nil
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		pi, pj := candidates[i].StateOf() == StatePending, candidates[j].StateOf() == StatePending
		if pi != pj {
			return pi
		}
		return candidates[i].Name > candidates[j].Name
	})
	var out []string
	for _, l := range candidates[:min(surplus, len(candidates))] {
		out = append(out, l.Name)
	}
	return out
}

// ReleaseDue says whether released leases are removed now. Each removal regenerates the image, so they
// go in batches: not while the pool is still destroying VMs, and only once no lease was released for quiet
// (CAPI deletes a scale-down's Machines one after another); never later than window after the first.
func ReleaseDue(released []Lease, deletionsInFlight bool, now time.Time, quiet, window time.Duration) bool {
	if len(released) == 0 {
		return false
	}
	var oldest, newest time.Time
	for _, l := range released {
		if l.ReleasedAt.IsZero() {
			continue
		}
		if oldest.IsZero() || l.ReleasedAt.Before(oldest) {
			oldest = l.ReleasedAt
		}
		if l.ReleasedAt.After(newest) {
			newest = l.ReleasedAt
		}
	}
	if !oldest.IsZero() && now.Sub(oldest) >= window {
		return true
	}
	if deletionsInFlight {
		return false
	}
	return newest.IsZero() || now.Sub(newest) >= quiet
}
