// Package planner decides everything a pool does, as one pure function over what a pass observed:
// Plan(Snapshot) → Decisions. How many VMs it creates and in which failure domain, which of its VMs it
// releases and why, which outdated VMs it replaces, which failed ones expire, why creation stops and
// when to look again. The pool controller gathers the Snapshot and carries out the Decisions; it decides
// nothing itself (only_planner_decides_test.go holds it to that).
package planner

import (
	"fmt"
	"sort"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Snapshot is everything one pass of a pool observed: the planner's whole input.
type Snapshot struct {
	// Now is the pass's time (the injected clock).
	Now time.Time
	// Waiting counts AgentMachines waiting with NoSuitableAgents (owner Machine present, not deleting).
	Waiting int
	// ForeignAvailable counts suitable unbound Agents matching the pool's labels that are not ours.
	ForeignAvailable int
	// PendingCreates are creations issued but not yet seen in the cache (expectations).
	PendingCreates int
	// VMs are the pool's VMs as listed.
	VMs []VM
	// Domains are the pool's failure domains as observed; a pool without failure domains has one,
	// named "".
	Domains []Domain
	// Standby is spec.standby: VMs of ours kept ready beyond waiting demand.
	Standby int
	// MaxVMs and MaxConcurrentProvisioning are spec.limits (nil: no cap).
	MaxVMs, MaxConcurrentProvisioning *int32
	// Paused is spec.paused: nothing is carried out.
	Paused bool
	// RemoveSurplus is true under cleanupPolicy Delete.
	RemoveSurplus bool
	// Blocks are the observed conditions that stop creation; blockRules orders them.
	Blocks Blocks
	// CurrentImage is the discovery image the pool serves now (zero while not known to be the
	// InfraEnv's current one); ReplaceOutdated is spec.iso.replaceOutdatedVMs.
	CurrentImage    Image
	ReplaceOutdated bool
	// RegistrationFailureThreshold trips the registration breaker (stepBreaker); Breaker is its memory
	// from the last pass (status.registrationBreaker), BreakerBackoff how long each trip in a row holds
	// creation; Generation is the pool's metadata.generation (a spec change resets the breaker).
	RegistrationFailureThreshold int
	Breaker                      Breaker
	BreakerBackoff               Backoff
	Generation                   int64
	// FailedRetention is how long a Failed VM is kept as evidence before it expires.
	FailedRetention time.Duration
	// Debounce batches bursts of demand; Burst is the burst an earlier pass left open (nil: none).
	Debounce Debounce
	Burst    *Burst
}

// VM is one of the pool's VMs (one VsphereAgent) as observed.
type VM struct {
	VMObservation
	// Domain is its failure domain ("" without failure domains).
	Domain string
	// HasVM: vCenter created its VM (status.vm.instanceUUID is set).
	HasVM bool
	// Image is the discovery image it booted (zero when not recorded).
	Image Image
	// StaticIPLease: it holds a static-IP lease (spec.network).
	StaticIPLease bool
	// AgentReady: its Agent is registered, validated, connected, approved and unbound (the provider
	// would take it now): a ready standby VM when it is Available.
	AgentReady bool
	// TemplateDrift says in what its VM differs from the pool's current template (empty: it matches);
	// TemplateUnrecorded: its template is not known (made before VMs recorded it, or adopted).
	TemplateDrift      []string
	TemplateUnrecorded bool
}

// Blocks are the observed conditions other than the registration breaker that stop creation.
type Blocks struct {
	// Preflight is the reason of a failed preflight check (selector, placement, privileges), "" if none.
	Preflight string
	// Hardware says why a VM of the current template would fail assisted-service's hardware validations
	// as a host of the pool did ("" if none).
	Hardware string
	// StaticIP is why static addressing cannot serve a lease now, "" if it can (or the pool uses DHCP).
	StaticIP string
	// NoSession: the pool has no usable vCenter session (credentials or login failed).
	NoSession bool
	// NoISO: the pool's discovery ISO is not cached yet.
	NoISO bool
}

// Decisions is everything a pass decided: the pool controller carries it out as it stands.
type Decisions struct {
	// Creates holds the failure domain of each VM to create now ("" without failure domains).
	Creates []string
	// Releases are the VMs to release now, in order, each with why: released after use and surplus
	// (capacity), abandoned in a failure domain (abandoned), outdated and replaced (DecideImage).
	Releases []Release
	// Expire names the Failed VMs kept past FailedRetention: deleted outright.
	Expire []string
	// Block is why creation stops ("" when it does not): the first of blockRules that applies.
	Block string
	// Breaker is the registration breaker's memory to keep for the next pass; BreakerState is
	// BreakerClosed, BreakerOpen or BreakerProbing.
	Breaker      *Breaker
	BreakerState string
	// RequeueAfter is when the pool looks again for this plan's sake (0: no need).
	RequeueAfter time.Duration
	// Burst is the burst window to remember for the next pass (nil: none open). CloseBurst: Creates
	// are due now, and once they are all created the burst is over (a failed batch keeps it open).
	Burst      *Burst
	CloseBurst bool
	// ScanOrphans: the periodic orphan scan may run (not while paused).
	ScanOrphans bool
	// Deficit and the counts of the pool's VMs by state, for status and metrics.
	Deficit                            int
	InFlight, Available, InUse, Failed int
	// Standby is the warm standby's state (StandbyReady condition, status.standby, metrics).
	Standby Standby
	// Actions are the planned actions shown in status.plannedActions, each with its reason.
	Actions []Action
	// Drift reports the bound workers made from an earlier template (DecideTemplate).
	Drift Drift
}

// Standby is the warm standby as this plan sees it.
type Standby struct {
	// Desired is spec.standby; Ready counts our ready Agents beyond what waiting demand takes (at most
	// Desired); Short is how many VMs it lacks beyond the demand's deficit.
	Desired, Ready, Short int
	// Limit is why its missing VMs cannot all be created now (MaxVMsReached, NoFailureDomainAvailable),
	// "" when nothing caps it.
	Limit string
}

// Release is one VM to release and why.
type Release struct {
	Name string
	// Reason is one of afv1.ReasonReleased, afv1.ReasonSurplus, afv1.ReasonOutdatedImage, afv1.ReasonFailureDomainNotFound,
	// afv1.ReasonCreationsFailing.
	Reason, Message string
}

// Replaces reports whether the release replaces an outdated VM (demand creates its successor).
func (r Release) Replaces() bool {
	return r.Reason == afv1.ReasonOutdatedImage || r.Reason == afv1.ReasonOutdatedTemplate
}

func (r Release) action() Action {
	return Action{Kind: ActionDelete, Target: r.Name, Reason: r.Reason, Message: r.Message}
}

// Action is one planned action with its reason (status.plannedActions).
type Action struct {
	Kind    string // one of the Action* kinds
	Target  string
	Reason  string
	Message string
}

// Kinds of Action.
const (
	ActionCreate = "Create"
	ActionDelete = "Delete"
	ActionWait   = "Wait"
	ActionRefuse = "Refuse"
)

// blockRules stop creation, in priority order: the first that names a reason is the pool's block.
var blockRules = []func(Snapshot) string{
	// The registration breaker first: its evidence is the pool's own failed VMs.
	func(s Snapshot) string {
		_, state := s.breaker()
		return when(state == BreakerOpen, afv1.ReasonRegistrationFailing)
	},
	func(s Snapshot) string { return s.Blocks.Preflight },
	func(s Snapshot) string { return when(s.Blocks.Hardware != "", afv1.ReasonHostValidationFailing) },
	func(s Snapshot) string { return s.Blocks.StaticIP },
	func(s Snapshot) string { return when(s.Blocks.NoSession, afv1.ReasonWaitingForVSphere) },
	func(s Snapshot) string { return when(s.Blocks.NoISO, afv1.ReasonWaitingForISO) },
}

func when(cond bool, reason string) string {
	if cond {
		return reason
	}
	return ""
}

// Plan decides one pass. The rules, in the order they apply:
//  1. each VM's one lifecycle state (Lifecycle);
//  2. a VM in flight not created yet whose failure domain is gone, or skips it for failing creations,
//     is abandoned: released, and not supply, so its demand goes to another domain (abandoned);
//  3. the first of blockRules that applies stops creation (registration breaker while open, preflight,
//     static addressing, vCenter session, ISO); a breaker probing after its hold lets one VM be in flight;
//  4. a VM that booted an outdated image is replaced: released, and not supply, so demand creates its
//     successor; never while creation is blocked or the pool paused (DecideImage); so is one whose Agent
//     never bound made from an earlier template, while a bound worker of one is only reported (DecideTemplate);
//  5. capacity: deficit and the warm standby's shortfall, creation capped by the limits, released and
//     surplus VMs; the standby is never surplus while it is short (computeCapacity);
//  6. paused: nothing is carried out, the burst window stays as it was; the counts still report;
//  7. creation for waiting demand waits for the burst window (Debounce.Observe), a standby refill does
//     not; then it is spread over the failure domains (spread); fewer VMs when the domains take fewer;
//  8. Failed VMs kept past FailedRetention expire.
func Plan(s Snapshot) Decisions {
	states := make([]vmState, len(s.VMs))
	var abandon []Release
	for i, vm := range s.VMs {
		states[i] = vmState{Name: vm.Name, State: Lifecycle(vm.VMObservation), CreatedAt: vm.CreatedAt, Ready: vm.AgentReady,
			Absent: !MayHaveVM(vm.Phase, vm.Reason)}
		if r, ok := abandoned(vm, states[i].State, s.Domains); ok {
			states[i].State = VMReleasing // not supply: the demand goes to another failure domain
			abandon = append(abandon, r)
		}
	}
	block := ""
	for _, rule := range blockRules {
		if block = rule(s); block != "" {
			break
		}
	}
	// VMs that booted an outdated image leave the supply now, so demand creates their replacements.
	var outdated []Release
	for i, vm := range s.VMs {
		v := DecideImage(ImageCheck{Enabled: s.ReplaceOutdated, Current: s.CurrentImage, Booted: vm.Image,
			State: states[i].State, StaticIPLease: vm.StaticIPLease, CreateBlocked: block != "" || s.Paused})
		if v.Replace {
			states[i].State = VMReleasing
			outdated = append(outdated, Release{Name: vm.Name, Reason: afv1.ReasonOutdatedImage, Message: v.Message})
		}
	}
	// VMs made from an earlier template: bound workers are reported, the others replaced.
	var drift Drift
	for i, vm := range s.VMs {
		if states[i].State == VMReleasing {
			continue
		}
		v := DecideTemplate(vm, states[i].State, block != "" || s.Paused)
		drift.add(vm, states[i].State, v)
		if v.Replace {
			states[i].State = VMReleasing
			outdated = append(outdated, Release{Name: vm.Name, Reason: afv1.ReasonOutdatedTemplate, Message: v.Message})
		}
	}
	sort.Strings(drift.Workers)
	byName(abandon)
	byName(outdated)

	breaker, breakerState := s.breaker()
	c := computeCapacity(capacityInput{Probe: breakerState == BreakerProbing,
		Waiting: s.Waiting, ForeignAvailable: s.ForeignAvailable, PendingCreates: s.PendingCreates, VMs: states,
		MaxVMs: s.MaxVMs, MaxConcurrentProvisioning: s.MaxConcurrentProvisioning,
		Paused: s.Paused, RemoveSurplus: s.RemoveSurplus, BlockReason: block, DomainOf: domainOf(s), Standby: s.Standby,
	})
	d := Decisions{Block: block, Breaker: &breaker, BreakerState: breakerState, Deficit: c.Deficit, InFlight: c.InFlight,
		Available: c.Available, InUse: c.InUse, Failed: c.Failed, Actions: c.Actions,
		Standby: Standby{Desired: s.Standby, Ready: c.StandbyReady, Short: c.StandbyShort, Limit: c.StandbyLimit}, Drift: drift}
	for _, r := range outdated {
		d.Actions = append(d.Actions, r.action())
	}
	if breakerState == BreakerOpen {
		d.RequeueAfter = breaker.HeldUntil.Sub(s.Now) // the hold ends: a probe may go
	}
	if s.Paused {
		d.Burst = s.Burst
		return d
	}
	d.ScanOrphans = true
	d.Releases = append(append(append(d.Releases, c.Release...), abandon...), outdated...)

	if c.Create > 0 {
		// The standby refills at once (its VMs do not depend on how many AgentMachines wait); the rest,
		// for waiting demand, waits for the burst window.
		n := c.Immediate
		if c.Create > c.Immediate {
			d.Burst, d.RequeueAfter = s.Debounce.Observe(s.Burst, s.Waiting, s.Now)
			if d.RequeueAfter == 0 {
				d.CloseBurst = true
				n = c.Create
			}
		}
		if n > 0 {
			d.Creates = spread(s.Domains, n)
			if len(d.Creates) < n {
				d.Actions = append(d.Actions, Action{Kind: ActionWait, Reason: afv1.ReasonNoFailureDomainAvailable,
					Message: fmt.Sprintf("%d VM(s) needed, the failure domains take %d now (see condition %s)", n, len(d.Creates), afv1.ConditionFailureDomainsAvailable)})
				if c.StandbyShort > 0 && d.Standby.Limit == "" {
					d.Standby.Limit = afv1.ReasonNoFailureDomainAvailable
				}
			}
		}
	} // else: no creation needed, Burst stays nil: the next burst opens a fresh window

	for _, vm := range s.VMs {
		if failedExpired(vm.VMObservation, s.Now, s.FailedRetention) {
			d.Expire = append(d.Expire, vm.Name)
		}
	}
	sort.Strings(d.Expire)
	return d
}

func observations(vms []VM) []VMObservation {
	out := make([]VMObservation, len(vms))
	for i := range vms {
		out[i] = vms[i].VMObservation
	}
	return out
}

// domainOf maps VM names to failure domains when the pool has failure domains (nil otherwise).
func domainOf(s Snapshot) map[string]string {
	zoned := false
	for _, d := range s.Domains {
		zoned = zoned || d.Name != ""
	}
	if !zoned {
		return nil
	}
	out := make(map[string]string, len(s.VMs))
	for _, vm := range s.VMs {
		out[vm.Name] = vm.Domain
	}
	return out
}

func byName(rs []Release) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
}
