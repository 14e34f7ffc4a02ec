package pool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/controllers/preflight"
	"github.com/containeroo/agent-forge-operator/controllers/staticip"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/exclusion"
	"github.com/containeroo/agent-forge-operator/internal/finalizers"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/planner"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/upstream"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// RBAC: exactly what the code calls; test/rbac proves each grant is needed and that the operator's whole
// job runs under them. Cached kinds need list+watch only (get/list of a cached kind is served by the
// informer); get is granted where the code reads live (APIReader). Every request is listed in docs/rbac.md.
// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagentpools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagentpools/status,verbs=update
// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagentpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagents,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups=capi-provider.agent-install.openshift.io,resources=agentmachines,verbs=list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=agent-install.openshift.io,resources=infraenvs,verbs=list;watch
// +kubebuilder:rbac:groups=hypershift.openshift.io,resources=nodepools,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler turns a NodePool's waiting AgentMachines into VsphereAgents (one per VM), and removes
// the ones no longer needed.
type Reconciler struct {
	client.Client
	// APIReader reads uncached: Secrets, and the fresh checks before anything is released.
	APIReader client.Reader
	Recorder  *events.Recorder
	Opts      config.Options
	ISO       ISOCache
	// ISOEvents requeues a pool when its ISO download finishes or the CRD guard changes its verdict.
	ISOEvents chan event.GenericEvent
	// Memory is the process's registry of per-pool records, shared with the VsphereAgent controller: the
	// pool's records register with it (registerMemory), and its Forget drops them all once the pool is gone.
	Memory       *poolmemory.Registry
	expectations *expectations
	debounce     *debouncer
	orphanScans  *lastRun
	// markedVMs shares the orphan scans' listing of marked VMs among pools (see markedVMListings).
	markedVMs markedVMListings
	copies    *copyMemory
	// latency measures demand→bound per AgentMachine (agent_forge_demand_to_bound_seconds).
	latency *boundLatency
	// statusWrites batches inventory-only status changes (see statusBatch).
	statusWrites *debouncer
	// own lets a pass see this controller's last write of its pool while the cache still lags.
	own *poolmemory.OwnWrites[*afv1.VsphereAgentPool]
	// Guard reports whether the served CRDs keep the ejection recovery record (condition CRDsCurrent).
	Guard *ejection.Guard
	// Exclusion closes the pool's pass while another agent-forge manager is active (nil: never).
	Exclusion *exclusion.Watcher
	// refusalEvents rate-limits the Events of refusals that last (credentials, placement, selector).
	refusalEvents events.EventLimiter
	// checks runs the preflight (selector, placement, privileges; built on first use, see preflight).
	checks     *preflight.Checker
	checksOnce sync.Once
	// domains remembers failing creations and capacity readings per failure domain.
	domains domainTracker
	// staticIP handles the leases of static-IP pools (built on first use, see leases).
	staticIP     *staticip.Leases
	staticIPOnce sync.Once
	// modules remembers each pool's anti-affinity checks and the cluster modules this process created.
	modules moduleMemory
}

// preflight returns the pool's preflight checker, built on first use.
func (r *Reconciler) preflight() *preflight.Checker {
	r.checksOnce.Do(func() {
		r.checks = &preflight.Checker{Reader: r.Client, Recorder: r.Recorder, Clock: r.Opts.Clock, Events: &r.refusalEvents}
	})
	return r.checks
}

// runPreflight checks the selector, the placement and the privileges (package preflight); a failed
// check blocks creation.
func (r *Reconciler) runPreflight(ctx context.Context, s *poolScope) error {
	res, err := r.preflight().Run(ctx, preflight.Input{Pool: s.pool, VS: s.vs, User: s.creds.Username})
	if res.Block != "" {
		s.preflightBlock = res.Block
	}
	s.requeueAfter(res.RequeueAfter)
	return err
}

// leases returns the pool's lease handling, built on first use.
func (r *Reconciler) leases() *staticip.Leases {
	r.staticIPOnce.Do(func() {
		r.staticIP = &staticip.Leases{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Clock: r.Opts.Clock, Events: &r.refusalEvents}
	})
	return r.staticIP
}

// observeLeases reads the leases of a static-IP pool (package staticip).
func (r *Reconciler) observeLeases(ctx context.Context, s *poolScope) error {
	st, err := r.leases().Observe(ctx, s.pool)
	s.staticIP = st
	return err
}

// prepareLeases keeps a static-IP pool's spare leases ready and removes released ones (package staticip).
func (r *Reconciler) prepareLeases(ctx context.Context, s *poolScope) error {
	if s.staticIP == nil {
		return nil
	}
	present := sets.New[string]()
	for _, va := range s.vas {
		present.Insert(va.Name)
	}
	pendingCreates, deleting := r.expectations.pending(client.ObjectKeyFromObject(s.pool).String(), present)
	requeue, err := r.leases().Prepare(ctx, s.staticIP, staticip.Input{Pool: s.pool, VAs: s.vas, VS: s.vs, PendingCreates: pendingCreates, Deleting: deleting})
	s.requeueAfter(requeue)
	return err
}

// poolScope is what one pass observed and decided; phases fill it in order.
type poolScope struct {
	pool     *afv1.VsphereAgentPool
	log      logr.Logger
	claimErr string
	// refsReason and refsMessage: the pool's references disagree with its NodePool (see checkRefs).
	refsReason, refsMessage string

	agentMachines []agents.AgentMachine
	waiting       int
	infraEnv      *agents.InfraEnv
	infraEnvErr   string

	vas       []afv1.VsphereAgent
	matching  []agents.Agent
	ourAgents sets.Set[string]

	creds   vsphere.Credentials
	vs      vsphere.Client
	vsErr   error
	isoCond *conditionUpdate
	// plan is what the planner decided this pass (zero when the pass ended before planning: planned false).
	plan    planner.Decisions
	planned bool
	// templates is the pool's current template per failure domain, computed once for the pass's plan and status.
	templates *poolspec.Templates
	// preflightBlock is the reason of a failed preflight check (selector, placement, privileges): no
	// VsphereAgent is created while it is set.
	preflightBlock string
	// hardwareRefusal says why no VM of the current template shape is created: a host of it failed a
	// hardware validation (hardwareRefusal; "" when none).
	hardwareRefusal string
	requeue         time.Duration
	// domains are the pool's failure domains (one, "", without any) as observeDomains found them.
	domains []domainView
	// staticIP is the pass's view of the leases of a static-IP pool (nil for DHCP pools).
	staticIP *staticip.State
}

type conditionUpdate struct {
	status          bool
	reason, message string
}

func (s *poolScope) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// Reconcile runs the pool's phases on an in-memory copy and patches status once, only if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	defer r.Opts.Liveness.Start(ControllerName, req.NamespacedName, r.Opts.PoolPassTimeout)()
	ctx = r.Opts.WithCrashPoint(ctx, req.NamespacedName)
	start := r.Opts.Clock.Now()
	log := ctrl.LoggerFrom(ctx)
	pool := &afv1.VsphereAgentPool{}
	if err := r.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			r.Memory.Forget(req.NamespacedName) // every record of the pool, both controllers' (see memory.go)
			forgetPoolMetrics(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	pool = r.own.Latest(pool)
	s := &poolScope{pool: pool, log: log}
	before := pool.Status.DeepCopy()
	defer func() {
		result := "success"
		if retErr != nil {
			result = "error"
		}
		metrics.ReconcileDuration.WithLabelValues("vsphereagentpool", result).Observe(r.Opts.Clock.Since(start).Seconds())
	}()

	// The one gate of the pool's pass: before its finalizer, its deletion and every phase that writes.
	if gate := r.Exclusion.Check(ctx); gate.Blocked {
		return r.standDown(ctx, s, before, gate)
	}
	if !pool.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	replaced := pool.ResourceVersion
	if wrote, err := finalizers.Patch(ctx, r.Client, pool, afv1.FinalizerPool, true); err != nil {
		return ctrl.Result{}, err
	} else if wrote {
		r.own.Wrote(replaced, pool)
	}

	// Upstream's finalizer goes once ours is in place, and only when the pool opted in to the move.
	if pool.Spec.Adoption == afv1.AdoptionEnabled && controllerutil.ContainsFinalizer(pool, afv1.FinalizerPool) {
		replaced := pool.ResourceVersion
		if wrote, err := finalizers.Patch(ctx, r.Client, pool, afv1.FinalizerUpstreamPool, false); err != nil {
			return ctrl.Result{}, err
		} else if wrote {
			r.own.Wrote(replaced, pool)
		}
	}

	// The pass's work ends at PoolPassTimeout (a vCenter that never answers); its status is written
	// with ctx, so a cut pass still reports why.
	work, cancel := context.WithTimeout(ctx, r.Opts.PoolPassTimeout)
	defer cancel()
	var errs []error
	var cut error
	for _, phase := range []struct {
		id, name string
		run      func(context.Context, *poolScope) error
	}{
		{"claim", "checking the NodePool claim", r.checkClaim}, {"refs", "checking the pool's references", r.checkRefs},
		{"agents", "observing capacity", r.observeCapacity}, {"demand", "observing demand", r.observeDemand},
		{"infraenv", "reading the InfraEnv", r.observeInfraEnv}, {"vcenter", "logging in to vCenter", r.connectVSphere},
		{"preflight", "running the preflight checks", r.runPreflight}, {"iso", "refreshing the ISO", r.refreshISO},
		{"domains", "observing failure domains", r.observeDomains}, {"modules", "keeping cluster modules", r.ensureClusterModules},
		{"leases", "observing leases", r.observeLeases},
		{"plan", "planning and acting", r.planAndAct}, {"prepare_leases", "preparing leases", r.prepareLeases},
	} {
		began := r.Opts.Clock.Now()
		err := phase.run(work, s)
		metrics.PoolPhaseDuration.WithLabelValues(phase.id).Observe(r.Opts.Clock.Since(began).Seconds())
		if errors.Is(work.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			// The phase's own error is the deadline's echo: the cut is the one error reported.
			cut = r.passCut(s, phase.name)
			errs = append(errs, cut)
			break
		}
		if err != nil {
			if errors.Is(err, errStop) {
				break
			}
			errs = append(errs, err)
			break
		}
	}
	if cut == nil {
		r.passFinished(s)
	}
	r.setStatus(s, len(errs) == 0)
	conditions.StampTransitions(before.Conditions, pool.Status.Conditions, r.Opts.Clock.Now())
	if !conditions.SameAsStored(before, &pool.Status) {
		if wait := r.statusBatch(req.String(), before, &pool.Status); wait > 0 {
			// Only counters and the VM list moved: batch them (a burst of VM phase changes is one write).
			s.requeueAfter(wait)
		} else if err := r.timedStatusWrite(ctx, pool); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: config.StatusConflictRequeue}, nil // a newer pool arrived: the next pass sees it
			}
			errs = append(errs, err)
		} else {
			r.statusWrites.forget(req.String())
			if err := crashpoint.Hit(ctx, crashpoint.PoolStatusWritten); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(errs)
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// statusBatch returns how long a status change should wait before it is written (0: now). A change of a
// condition's status or reason, the ISO or observedGeneration is written at once; a change of only
// counters, the VM list and messages waits until the status stood still for StatusBatchInterval, or
// StatusBatchMax after the first such change: a pool whose VMs move through their phases one after
// another gets a write per burst, not one per VM phase change. Batching is a write rate limit, so it
// runs on Options.BatchClock (real time by default), not Clock (which the scenario suite freezes).
func (r *Reconciler) statusBatch(key string, before, after *afv1.VsphereAgentPoolStatus) time.Duration {
	if !inventoryOnly(before, after) {
		return 0
	}
	fingerprint, err := json.Marshal(after)
	if err != nil {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(fingerprint)
	return r.statusWrites.wait(key, int(h.Sum64()))
}

// inventoryOnly reports whether two statuses differ only in counters (ejections too), the VM list,
// planned actions and condition messages (not in a condition's status or reason, ISO state or observedGeneration).
func inventoryOnly(before, after *afv1.VsphereAgentPoolStatus) bool {
	b := before.DeepCopy()
	b.DesiredReplicas, b.AgentMachines, b.WaitingAgentMachines = after.DesiredReplicas, after.AgentMachines, after.WaitingAgentMachines
	b.UnreadyAgentMachines, b.AgentMachinesWithoutAgent = after.UnreadyAgentMachines, after.AgentMachinesWithoutAgent
	b.MatchingAgents, b.BoundAgents, b.AvailableAgents, b.VMs = after.MatchingAgents, after.BoundAgents, after.AvailableAgents, after.VMs
	b.OwnedVMs, b.PlannedActions, b.ISOEjections = after.OwnedVMs, after.PlannedActions, after.ISOEjections
	batchDomainCounts(b, after)
	// Condition messages carry counts too; a change of status or reason is never batched, except
	// between the two reasons of a scale-up under way (see progressReasons).
	for i := range b.Conditions {
		c := conditions.FindCondition(after.Conditions, b.Conditions[i].Type)
		if c == nil || c.Status != b.Conditions[i].Status {
			continue
		}
		if c.Reason == b.Conditions[i].Reason || progressReasons(c.Type, c.Reason, b.Conditions[i].Reason) {
			b.Conditions[i].Reason, b.Conditions[i].Message = c.Reason, c.Message
		}
	}
	return conditions.SameAsStored(b, after)
}

// progressReasons reports whether a condition moving between reasons a and b (same status) is a count
// moving, not a new situation: CapacitySatisfied=False goes Deficit -> ProvisioningInProgress each time
// the pool creates VMs for newly waiting AgentMachines and back with the next ones, so a scale-up that
// arrives in waves (an autoscaler's, a MachineSet's) flipped it twice a wave, and each flip was a pool
// status write of its own (472 of 891 in a 50-pool run). Both say "more capacity is on its way"; a
// refusal (InsufficientCapacity, a limit, a preflight block) or CapacitySatisfied changing status is still
// written at once.
func progressReasons(condition, a, b string) bool {
	if condition != afv1.ConditionCapacitySatisfied {
		return false
	}
	progress := func(r string) bool { return r == afv1.ReasonDeficit || r == afv1.ReasonProvisioningInProgress }
	return progress(a) && progress(b)
}

// errStop ends a pass early without an error (e.g. the NodePool is claimed by another pool).
var errStop = errors.New("stop")

// checkClaim refuses to act when an older pool already serves the same NodePool.
func (r *Reconciler) checkClaim(ctx context.Context, s *poolScope) error {
	var pools afv1.VsphereAgentPoolList
	if err := r.List(ctx, &pools, client.InNamespace(s.pool.Namespace), client.MatchingFields{watch.IndexNodePool: s.pool.Spec.NodePoolRef.Name}); err != nil {
		return err
	}
	for i := range pools.Items {
		other := &pools.Items[i]
		if other.UID == s.pool.UID || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if olderThan(other, s.pool) {
			s.claimErr = fmt.Sprintf("NodePool %s is already served by VsphereAgentPool %s; this pool takes no action", s.pool.Spec.NodePoolRef.Name, other.Name)
			r.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonNodePoolAlreadyClaimed, events.ActionClaimNodePool, "%s", s.claimErr)
			return errStop
		}
	}
	return nil
}

func olderThan(a, b *afv1.VsphereAgentPool) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// observeDemand counts the NodePool's AgentMachines that wait for an Agent: the demand signal.
func (r *Reconciler) observeDemand(ctx context.Context, s *poolScope) error {
	list := agents.NewList(agents.AgentMachineGVK)
	key := s.pool.Namespace + "/" + s.pool.Spec.NodePoolRef.Name
	if err := r.List(ctx, list, client.InNamespace(s.pool.Spec.ControlPlaneNamespace), client.MatchingFields{watch.IndexAgentMachinePool: key}); err != nil {
		return fmt.Errorf("listing AgentMachines: %w", err)
	}
	// The provider labels the Agent before it writes the AgentMachine's agentRef: an AgentMachine whose
	// Agent is already reserved no longer waits, else the gap between the two writes looks like demand.
	// Agent.ReservedBy is the one reading of that label.
	s.agentMachines = s.agentMachines[:0]
	s.waiting = 0
	waiting := sets.New[types.UID]()
	for i := range list.Items {
		am := agents.AgentMachineFrom(&list.Items[i])
		s.agentMachines = append(s.agentMachines, am)
		if am.WaitsForAgent() && !agents.AnyReservedBy(s.matching, am) && r.ownerMachineActive(ctx, am) {
			s.waiting++
			waiting.Insert(am.UID)
		}
	}
	r.latency.observe(client.ObjectKeyFromObject(s.pool), s.agentMachines, waiting, r.Opts.Clock.Now())
	return nil
}

// ownerMachineActive: before the owner Machine exists the provider can report NoSuitableAgents too;
// count demand only for AgentMachines whose Machine exists and is not being deleted. The Machine is the
// owner the Machine controller recorded or, until it has (minutes behind a busy CAPI), the Machine CAPI's
// MachineSet created right after the AgentMachine: same name, controlled by the MachineSet that owns the
// AgentMachine (agents.MachineOfAgentMachine).
func (r *Reconciler) ownerMachineActive(ctx context.Context, am agents.AgentMachine) bool {
	name := am.OwnerMachine
	if name == "" && am.OwnerMachineSet != "" {
		name = am.Name
	}
	if name == "" {
		return false
	}
	m := agents.New(agents.MachineGVK())
	if err := r.Get(ctx, types.NamespacedName{Namespace: am.Namespace, Name: name}, m); err != nil {
		return false
	}
	return agents.MachineOfAgentMachine(m, am) && m.GetDeletionTimestamp() == nil
}

// observeCapacity lists the pool's VsphereAgents and the Agents carrying its labels.
func (r *Reconciler) observeCapacity(ctx context.Context, s *poolScope) error {
	var vas afv1.VsphereAgentList
	if err := r.List(ctx, &vas, client.InNamespace(s.pool.Namespace), client.MatchingFields{watch.IndexPoolRef: s.pool.Name}); err != nil {
		return err
	}
	// An upstream VsphereAgent not adopted yet is not the pool's to count, release or replace.
	s.vas = s.vas[:0]
	for i := range vas.Items {
		if !upstream.Pending(&vas.Items[i]) {
			s.vas = append(s.vas, vas.Items[i])
		}
	}
	sort.Slice(s.vas, func(i, j int) bool { return s.vas[i].Name < s.vas[j].Name })
	s.ourAgents = sets.New[string]()
	for _, va := range s.vas {
		if va.Status.VM.AgentName != "" {
			s.ourAgents.Insert(va.Status.VM.AgentName)
		}
	}
	list := agents.NewList(agents.AgentGVK)
	if err := r.List(ctx, list, client.InNamespace(s.pool.Namespace), client.MatchingLabels(s.pool.Spec.Agent.LabelSet())); err != nil {
		return fmt.Errorf("listing Agents: %w", err)
	}
	s.matching = s.matching[:0]
	for i := range list.Items {
		s.matching = append(s.matching, agents.AgentFrom(&list.Items[i]))
	}
	s.hardwareRefusal = hardwareRefusal(s)
	return nil
}

// observeInfraEnv checks that the InfraEnv exists and publishes an ISO URL.
func (r *Reconciler) observeInfraEnv(ctx context.Context, s *poolScope) error {
	u := agents.New(agents.InfraEnvGVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: s.pool.Namespace, Name: s.pool.Spec.InfraEnvRef.Name}, u)
	switch {
	case apierrors.IsNotFound(err):
		s.infraEnvErr = fmt.Sprintf("InfraEnv %s not found", s.pool.Spec.InfraEnvRef.Name)
		return nil
	case err != nil:
		return err
	}
	ie := agents.InfraEnvFrom(u)
	s.infraEnv = &ie
	if ie.ISODownloadURL == "" {
		s.infraEnvErr = fmt.Sprintf("InfraEnv %s has no status.isoDownloadURL yet", ie.Name)
	}
	return nil
}

// connectVSphere gets the pool's cached vSphere session. Failure blocks creation but not status; it is
// announced by a Warning Event (rate-limited, see events.EventLimiter) as well as VSphereReachable.
func (r *Reconciler) connectVSphere(ctx context.Context, s *poolScope) error {
	creds, err := r.Opts.Credentials.Read(ctx, r.APIReader, s.pool, r.Opts.CredentialsSecretNamespaces)
	if err != nil {
		s.vsErr = err
		r.credentialsRefused(s, err)
		s.requeueAfter(credentialsRetry(err))
		return nil
	}
	s.creds = creds
	vs, err := r.Opts.Sessions.Get(ctx, creds)
	if err != nil {
		r.Opts.Credentials.ForgetRefused(s.pool, err)
		s.vsErr = err
		r.credentialsRefused(s, err)
		s.requeueAfter(time.Minute)
		return nil
	}
	r.refusalEvents.Clear(client.ObjectKeyFromObject(s.pool).String() + "/credentials")
	s.vs = vs
	return nil
}

// Secrets are not watched, so after a failed read of the credentials Secret nothing else would start the
// pool's next pass (a waiting AgentMachine was seen stalled for good by the crash campaign, issue 44): an
// API error (429, 503, a timeout) is retried soon, a missing or unusable Secret is polled.
const (
	credentialsTransientRetry = 5 * time.Second
	credentialsSecretPoll     = 30 * time.Second
)

// credentialsRetry is when a pool whose credentials could not be read looks again.
func credentialsRetry(err error) time.Duration {
	if credentials.VSphereReason(err) == afv1.ReasonTransient {
		return credentialsTransientRetry
	}
	return credentialsSecretPoll
}

// credentialsRefused records the Warning Event of a credentials or login failure: its reason is the
// VSphereReachable reason; its message names the Secret, never a value of it or a URL's token.
func (r *Reconciler) credentialsRefused(s *poolScope, err error) {
	reason := credentials.VSphereReason(err)
	if !r.refusalEvents.Allow(client.ObjectKeyFromObject(s.pool).String()+"/credentials", reason, r.Opts.Clock.Now()) {
		return
	}
	r.Recorder.Eventf(s.pool, nil, "Warning", reason, events.ActionPreflight, "vCenter not usable, no VM is created: %s", err)
}

// refreshISO keeps the discovery ISO cached (asynchronously: a download never blocks this worker).
func (r *Reconciler) refreshISO(ctx context.Context, s *poolScope) error {
	if r.ISO == nil || s.pool.Spec.Paused {
		return nil
	}
	if s.infraEnv == nil || s.infraEnvErr != "" {
		s.isoCond = &conditionUpdate{false, afv1.ReasonInfraEnvNotReady, s.infraEnvErr}
		return nil
	}
	cb, err := r.readCABundle(ctx, s.pool)
	if err != nil {
		return err
	}
	if cb.missing != "" {
		r.caBundleMissing(s, cb)
		return nil
	}
	r.refusalEvents.Clear(client.ObjectKeyFromObject(s.pool).String() + "/cabundle")
	if s.vs == nil {
		return nil
	}
	upd := r.ISO.Reconcile(ctx, ISORequest{Pool: s.pool, InfraEnv: *s.infraEnv, Client: s.vs, CABundle: cb.pem, CABundleSource: cb.source})
	if upd.Status != nil {
		s.pool.Status.ISO = upd.Status
	}
	s.isoCond = &conditionUpdate{upd.Ready, upd.Reason, upd.Message}
	s.requeueAfter(upd.RequeueAfter)
	return nil
}

// planAndAct gathers what the pass observed, lets the planner decide and carries out its plan.
func (r *Reconciler) planAndAct(ctx context.Context, s *poolScope) error {
	s.plan, s.planned = planner.Plan(r.snapshot(s)), true
	return r.carryOut(ctx, s)
}
