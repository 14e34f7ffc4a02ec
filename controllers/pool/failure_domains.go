package pool

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/redact"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// capacityCheckInterval is how often a placement's capacity is read from vCenter while a pool placing VMs
// there reconciles; a domain short of capacity is retried on this timer.
const capacityCheckInterval = 30 * time.Second

// domainBackoff is how long a failure domain whose VM creations failed is skipped: 1 min after the first
// failure, doubled for each further failure in a row, at most 15 min; a VM created there resets it.
var domainBackoff = planner.Backoff{Base: time.Minute, Ceiling: 15 * time.Minute}

// domainTracker remembers, per pool and failure domain, failed creations (backoff), where the domain
// places its VMs and the VsphereAgents created but not yet seen in the cache; and, per placement, the
// last capacity reading (shared by every pool placing VMs there). The zero value is ready.
type domainTracker struct {
	mu       sync.Mutex
	failing  map[string]*domainFailures
	capacity map[string]*capacityReading  // placement key -> last reading
	devices  map[string]*deviceReading    // devices key -> last reading of the hosts' PCI devices
	placed   map[string]placedAs          // pool key/domain -> where and what the domain places
	recent   map[string]map[string]string // pool key -> VsphereAgent name -> domain
	metered  map[string]sets.Set[string]  // pool key -> domains listed on the last pass
}

// meter records the pool's failure domains and deletes the headroom series of the ones no longer listed
// (a failure domain removed from the spec).
func (t *domainTracker) meter(pool *afv1.VsphereAgentPool, poolKey string, domains sets.Set[string]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for d := range t.metered[poolKey] {
		if !domains.Has(d) {
			metrics.PoolHeadroom.DeleteLabelValues(pool.Namespace, pool.Name, d)
		}
	}
	if t.metered == nil {
		t.metered = map[string]sets.Set[string]{}
	}
	t.metered[poolKey] = domains
}

type domainFailures struct {
	failures   int
	lastAt     time.Time
	retryAfter time.Time
	last       string // what failed last (VsphereAgent and reason)
	seen       map[types.UID]bool
}

// ForgetPool drops everything remembered of a deleted pool's domains (a poolmemory Record).
func (t *domainTracker) ForgetPool(pool types.NamespacedName) {
	poolKey := pool.String()
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.failing {
		if strings.HasPrefix(k, poolKey+"/") {
			delete(t.failing, k)
		}
	}
	for k := range t.placed {
		if strings.HasPrefix(k, poolKey+"/") {
			delete(t.placed, k)
		}
	}
	delete(t.recent, poolKey)
	delete(t.metered, poolKey)
}

// HoldsPool reports whether anything of the pool's domains is remembered.
func (t *domainTracker) HoldsPool(pool types.NamespacedName) bool {
	poolKey := pool.String()
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.failing {
		if strings.HasPrefix(k, poolKey+"/") {
			return true
		}
	}
	for k := range t.placed {
		if strings.HasPrefix(k, poolKey+"/") {
			return true
		}
	}
	_, recent := t.recent[poolKey]
	_, metered := t.metered[poolKey]
	return recent || metered
}

// created records VsphereAgents just created in domain (not in the cache yet).
func (t *domainTracker) created(poolKey, name, domain string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recent == nil {
		t.recent = map[string]map[string]string{}
	}
	if t.recent[poolKey] == nil {
		t.recent[poolKey] = map[string]string{}
	}
	t.recent[poolKey][name] = domain
	t.reserve(poolKey + "/" + domain)
}

// unseen returns, per domain, the VsphereAgents created but not yet listed, dropping those now present.
func (t *domainTracker) unseen(poolKey string, present sets.Set[string]) map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for name, d := range t.recent[poolKey] {
		if present.Has(name) {
			delete(t.recent[poolKey], name)
			continue
		}
		out[d]++
	}
	return out
}

// creationFailed reports whether va's VM creation failed in a way its domain answers for: a create
// vCenter refused (retried or for good), or a VM that never registered.
func creationFailed(va *afv1.VsphereAgent) bool {
	switch va.Status.VM.Phase {
	case afv1.VMPhasePending:
		return va.Status.VM.Reason == afv1.ReasonVMCreateFailed
	case afv1.VMPhaseFailed:
		return va.Status.VM.Reason != afv1.ReasonDuplicateName && planner.CountsTowardsBreaker(va.Status.VM.Reason)
	}
	return false
}

// noteFailures updates the domain's failure record from its VsphereAgents: each one failing counts once;
// a VM created after the last failure resets the count. It returns the record (nil: never failed).
func (t *domainTracker) noteFailures(key string, vas []*afv1.VsphereAgent, now time.Time) *domainFailures {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failing == nil {
		t.failing = map[string]*domainFailures{}
	}
	f := t.failing[key]
	for _, va := range vas {
		if created := va.Status.VM.CreatedAt; f != nil && created != nil && created.After(f.lastAt) {
			delete(t.failing, key) // a VM was created here since: the domain works again
			f = nil
		}
	}
	for _, va := range vas {
		if !creationFailed(va) {
			continue
		}
		if f == nil {
			f = &domainFailures{seen: map[types.UID]bool{}}
			t.failing[key] = f
		}
		if f.seen[va.UID] {
			continue
		}
		f.seen[va.UID] = true
		f.failures++
		f.lastAt = now
		f.retryAfter = now.Add(domainBackoff.Next(f.failures))
		f.last = fmt.Sprintf("VsphereAgent %s: %s", va.Name, va.Status.VM.Reason)
		if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionVMCreated); c != nil && c.Status == metav1.ConditionFalse {
			f.last += " (" + redact.String(c.Message) + ")"
		}
	}
	if f == nil {
		return nil
	}
	out := *f
	return &out
}

// domainView is what observeDomains found about one failure domain.
type domainView struct {
	planner.Domain
	placement poolspec.Placement
	status    afv1.FailureDomainStatus
}

// observeDomains counts the pool's VMs per failure domain, skips domains whose creations keep failing
// (backoff on the injected clock) and domains without capacity for one more VM of the template, and
// reports both in condition FailureDomainsAvailable, status.failureDomains, Events and the headroom metric.
func (r *Reconciler) observeDomains(ctx context.Context, s *poolScope) error {
	p := s.pool
	poolKey := client.ObjectKeyFromObject(p).String()
	now := r.Opts.Clock.Now()
	placements := poolspec.Domains(p)
	byDomain := map[string][]*afv1.VsphereAgent{}
	present := sets.New[string]()
	for i := range s.vas {
		va := &s.vas[i]
		present.Insert(va.Name)
		byDomain[va.Spec.FailureDomain] = append(byDomain[va.Spec.FailureDomain], va)
	}
	unseen := r.domains.unseen(poolKey, present)
	multi := len(placements) > 1
	s.domains = s.domains[:0]
	listed := sets.New[string]()
	for _, pl := range placements {
		listed.Insert(pl.Name)
	}
	r.domains.meter(p, poolKey, listed)
	var problems []string
	reason := ""
	for _, pl := range placements {
		v := domainView{placement: pl, Domain: planner.Domain{Name: pl.Name, MaxVMs: pl.MaxVMs, VMs: unseen[pl.Name], InFlight: unseen[pl.Name]}}
		vms, inFlight := domainCounts(byDomain[pl.Name])
		v.VMs += vms
		v.InFlight += inFlight
		v.status = afv1.FailureDomainStatus{Name: pl.Name, VMs: int32(v.VMs), InFlight: int32(v.InFlight), Available: true}
		key := poolKey + "/" + pl.Name
		label := poolspec.DomainLabel(pl.Name)
		// With one placement there is nowhere else to go: its VsphereAgents keep retrying (createFailed).
		if f := r.domains.noteFailures(key, byDomain[pl.Name], now); multi && f != nil && now.Before(f.retryAfter) {
			v.Skipped, v.Failing = true, true
			msg := fmt.Sprintf("%s: VM creation failed %d time(s) in a row (last: %s); skipped until %s", label, f.failures, f.last, f.retryAfter.UTC().Format(time.RFC3339))
			v.status.Available, v.status.Reason, v.status.Message = false, afv1.ReasonCreationsFailing, msg
			v.status.RetryAfter = &metav1.Time{Time: f.retryAfter}
			problems = append(problems, msg)
			reason = afv1.ReasonCreationsFailing
			s.requeueAfter(f.retryAfter.Sub(now))
			if r.refusalEvents.Allow(key+"/failing", fmt.Sprintf("%d", f.failures), now) {
				r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonCreationsFailing, events.ActionPlaceVM, "%s; the other failure domains take the demand", msg)
			}
		}
		// A domain whose hosts lack the pool's PCI devices takes no VM; its capacity is not read.
		if s.vs != nil && s.preflightBlock == "" && !p.Spec.Paused && !v.Skipped && !r.devicesOffered(ctx, s, &v, key, label, now) {
			if reason == "" {
				reason = afv1.ReasonPCIDevicesUnavailable
			}
			problems = append(problems, v.status.Message)
			s.domains = append(s.domains, v)
			continue
		}
		if s.vs != nil && s.preflightBlock == "" && !p.Spec.Paused {
			c := r.domains.reading(ctx, key, s.creds.Server, s.vs, vsphere.CapacitySpec{Datacenter: p.Spec.VSphere.Datacenter,
				ResourcePool: pl.ResourcePool, DatastoreCluster: pl.DatastoreCluster}, poolspec.VMNeed(p), now)
			switch {
			case c.err != "":
				// Unknown, not short: vCenter itself refuses a create that does not fit.
				v.status.Message = "capacity could not be read: " + c.err
				if v.status.Reason == "" {
					v.status.Reason = afv1.ReasonCapacityUnchecked
				}
				s.requeueAfter(capacityCheckInterval)
			default:
				left := c.headroom
				v.Headroom = &left
				h := int32(min(left, 1<<30))
				v.status.Headroom = &h
				metrics.PoolHeadroom.WithLabelValues(p.Namespace, p.Name, pl.Name).Set(float64(left))
				if left == 0 && !v.Skipped {
					v.Skipped = true
					msg := fmt.Sprintf("%s: no room for one more VM of %d vCPU, %d MiB: %s", label, p.Spec.Template.NumCPUs,
						p.Spec.Template.MemoryMiB, strings.Join(c.short, "; "))
					if len(c.short) == 0 {
						msg = fmt.Sprintf("%s: the VMs this operator created since vCenter's last reading used its headroom; read again within %s", label, capacityCheckInterval)
					}
					v.status.Available, v.status.Reason, v.status.Message = false, afv1.ReasonInsufficientCapacity, msg
					problems = append(problems, msg)
					s.requeueAfter(capacityCheckInterval) // retried on this timer
					if reason == "" {
						reason = afv1.ReasonInsufficientCapacity
					}
					if len(c.short) > 0 && r.refusalEvents.Allow(key+"/capacity", afv1.ReasonInsufficientCapacity, now) {
						r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonInsufficientCapacity, events.ActionPlaceVM, "%s; no VM is created there, retried every %s", msg, capacityCheckInterval)
					}
				} else if left > 0 {
					r.refusalEvents.Clear(key + "/capacity")
				}
			}
		}
		s.domains = append(s.domains, v)
	}
	if len(p.Spec.VSphere.FailureDomains) > 0 {
		p.Status.FailureDomains = p.Status.FailureDomains[:0]
		for _, v := range s.domains {
			p.Status.FailureDomains = append(p.Status.FailureDomains, v.status)
		}
	} else {
		p.Status.FailureDomains = nil
	}
	if len(problems) == 0 {
		conditions.SetCondition(&p.Status.Conditions, afv1.ConditionFailureDomainsAvailable, true, afv1.ReasonAllAvailable,
			"every failure domain takes new VMs", p.Generation)
		return nil
	}
	sort.Strings(problems)
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionFailureDomainsAvailable, false, reason, strings.Join(problems, "; "), p.Generation)
	return nil
}

// domainCounts counts a failure domain's VMs for its maxVMs: every one that may exist in vCenter
// (releasing and failed ones too, until recorded gone: planner.MayHaveVM), and of them those in flight
// (not registered yet, not being deleted).
func domainCounts(vas []*afv1.VsphereAgent) (vms, inFlight int) {
	for _, va := range vas {
		if !planner.MayHaveVM(va.Status.VM.Phase, va.Status.VM.Reason) {
			continue
		}
		vms++
		switch va.Status.VM.Phase {
		case "", afv1.VMPhasePending, afv1.VMPhaseProvisioning:
			if va.DeletionTimestamp.IsZero() {
				inFlight++
			}
		}
	}
	return vms, inFlight
}

// batchDomainCounts copies into b the per-domain counters of after (VMs, in flight, headroom) of domains
// whose availability and reason did not change: like the pool's other counters, they are written batched.
func batchDomainCounts(b, after *afv1.VsphereAgentPoolStatus) {
	if len(b.FailureDomains) != len(after.FailureDomains) {
		return
	}
	for i := range b.FailureDomains {
		d, a := &b.FailureDomains[i], after.FailureDomains[i]
		if d.Name == a.Name && d.Available == a.Available && d.Reason == a.Reason {
			d.VMs, d.InFlight, d.Headroom, d.Message = a.VMs, a.InFlight, a.Headroom, a.Message
		}
	}
}
