package planner

import (
	"fmt"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Domain is one failure domain of a pool as a pass sees it (a pool without failure domains has one,
// named "").
type Domain struct {
	Name string
	// VMs counts the pool's VMs placed in the domain that may exist in vCenter, whatever their state
	// (releasing and failed ones too, see MayHaveVM): maxVMs caps what exists.
	VMs int
	// InFlight counts the domain's VMs created but not yet registered.
	InFlight int
	// MaxVMs caps the domain's VMs (nil: no cap).
	MaxVMs *int32
	// Headroom is how many more VMs fit (nil: not measured, no cap).
	Headroom *int
	// Skipped: the domain takes no new VM now (its creations keep failing, its capacity is short).
	Skipped bool
	// Failing: skipped because its creations keep failing (backoff); its VMs whose own creation failed
	// are abandoned there (see abandoned).
	Failing bool
}

// room is how many more VMs the domain takes; -1 means no cap.
func (d Domain) room() int {
	r := -1
	if d.Skipped {
		return 0
	}
	if d.MaxVMs != nil {
		r = max(int(*d.MaxVMs)-d.VMs, 0)
	}
	if d.Headroom != nil && (r < 0 || *d.Headroom < r) {
		r = max(*d.Headroom, 0)
	}
	return r
}

// spread places n new VMs, one at a time, each in the domain with the fewest VMs of this pool, ties
// broken by the fewest in flight, then by name; a skipped domain, or one at its maxVMs or out of
// headroom, takes none. It returns the domain of each VM placed, fewer than n when every domain is full.
func spread(domains []Domain, n int) []string {
	ds := make([]Domain, len(domains))
	copy(ds, domains)
	taken := make([]int, len(ds))
	var out []string
	for len(out) < n {
		best := -1
		for i, d := range ds {
			if r := d.room(); r == 0 || (r > 0 && taken[i] >= r) {
				continue
			}
			if best < 0 || fewer(ds[i], ds[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, ds[best].Name)
		ds[best].VMs++
		ds[best].InFlight++
		taken[best]++
	}
	return out
}

func fewer(a, b Domain) bool {
	if a.VMs != b.VMs {
		return a.VMs < b.VMs
	}
	if a.InFlight != b.InFlight {
		return a.InFlight < b.InFlight
	}
	return a.Name < b.Name
}

// pickByPopulatedDomain releases n of the candidates (already in release order) from the most populated
// domains first: each pick takes the first candidate of the domain with the most VMs (population counts
// every VM of the pool, in use or not), ties by domain name. VMs in use are never candidates.
func pickByPopulatedDomain(cands []vmState, n int, vms []vmState, domainOf map[string]string) []string {
	population := map[string]int{}
	for _, vm := range vms {
		if vm.State != VMReleasing && vm.State != VMFailed {
			population[domainOf[vm.Name]]++
		}
	}
	used := make([]bool, len(cands))
	var out []string
	for len(out) < n {
		best := -1
		for i, c := range cands {
			if used[i] {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			pi, pb := population[domainOf[c.Name]], population[domainOf[cands[best].Name]]
			if pi > pb || (pi == pb && domainOf[c.Name] < domainOf[cands[best].Name]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		used[best] = true
		population[domainOf[cands[best].Name]]--
		out = append(out, cands[best].Name)
	}
	return out
}

// abandoned reports whether a VM in flight whose VsphereAgent has no VM yet is given up where it
// stands, with the release that says why: its failure domain was removed from the pool, or is skipped
// because creations keep failing there and this VM's creation failed too. Its demand goes to another
// domain. Only a VM in flight: one in use (its Agent bound, a Machine) is never released, one already
// being released (its deletion seen or issued) not again.
func abandoned(vm VM, state VMLifecycle, domains []Domain) (Release, bool) {
	if vm.HasVM || state != VMInFlight || len(domains) == 0 {
		return Release{}, false
	}
	for _, d := range domains {
		if d.Name == vm.Domain {
			if d.Failing && vm.Reason == afv1.ReasonVMCreateFailed {
				return Release{Name: vm.Name, Reason: afv1.ReasonCreationsFailing, Message: fmt.Sprintf(
					"its creation failed in failure domain %s, which is skipped while its creations keep failing: the demand goes to the other failure domains", vm.Domain)}, true
			}
			return Release{}, false
		}
	}
	return Release{Name: vm.Name, Reason: afv1.ReasonFailureDomainNotFound, Message: fmt.Sprintf(
		"its failure domain %q is no longer one of the pool's and its VM was not created: the demand goes to the pool's failure domains", vm.Domain)}, true
}

// Backoff is the skip window of a failure domain whose VM creations failed: base after the first failure,
// doubled for each further failure in a row, at most ceiling.
type Backoff struct {
	Base, Ceiling time.Duration
}

// Next returns how long a domain with failures consecutive failures is skipped.
func (b Backoff) Next(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := b.Base
	for i := 1; i < failures && d < b.Ceiling; i++ {
		d *= 2
	}
	return min(d, b.Ceiling)
}
