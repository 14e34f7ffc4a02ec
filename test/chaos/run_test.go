package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/apifaults"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

const (
	// serveBound is how long demand may wait after the last change or restart (the "demand served within
	// a bound" invariant); every other wait of a run uses it too.
	serveBound = 45 * time.Second
	pollEvery  = 150 * time.Millisecond
)

type campaign struct {
	t       *testing.T
	h       *harness.Harness
	watch   client.WithWatch // the API server's watch, for the moment checks
	moments *moments
	proxy   *apifaults.Proxy // nil without CHAOS_API_FAULTS
	hook    *hook
	op      operator
	seed    uint64
	foreign foreignState
}

// run is one scenario in its own namespaces, with its own world driver and ISO server.
type run struct {
	c     *campaign
	ctx   context.Context
	p     plan
	notes <-chan string
	start time.Time
	took  time.Duration
	// kills counts the kills executed during the run; unfired says why each planned kill that was not
	// executed was not (the run's hit counts, or the failed kill's error).
	kills   int
	unfired []string

	s        *world.Scenario
	w        *world.Driver
	iso      *sim.ISOServer
	isoSizes map[string]int64 // sha256 -> size of every image this run's server served
	pool     types.NamespacedName
	poolUID  string
	poolObj  *afv1.VsphereAgentPool
	locked   map[string]*vcsim.VM // instance UUID -> door-locking VM
	// static: the world's static addressing (static-ips; nil: DHCP), network the pool's spec.network;
	// domains: the pool's failure domains (failure-domains).
	static  *world.StaticIPOptions
	network *afv1.NetworkSpec
	domains []afv1.FailureDomain
	// retained: the pool was deleted under Retain (its VMs legitimately outlive their VsphereAgents);
	// released: deleted under Delete (VMs backing Machines outlive them).
	retained, released bool

	events     []string
	violations []string

	// Demand history and the moment checks (moment_test.go); written from callback goroutines.
	demandMu                        sync.Mutex
	demand                          []demandStep
	momentMu                        sync.Mutex
	momentViolations                []string
	destroysChecked, createsChecked int
	peakVMs, peakVAs                int
	momentSummary                   string

	// copies are the run's copies of a pool VM and its foreign VM (copies_test.go; nil until made),
	// copiesChecked how many settled checks they got.
	copiesMu      sync.Mutex
	copies        []copyVM
	copiesChecked int
	// standby and maxVMs are the pool's spec.standby and spec.limits.maxVMs (0: none); limitSamples
	// counts the instants the pool's VMs were counted against maxVMs (limits_test.go).
	standby, maxVMs int
	limitSamples    int
	limitPeak       int
}

func (c *campaign) newRun(ctx context.Context, p plan, notes <-chan string) *run {
	return &run{c: c, ctx: ctx, p: p, notes: notes, locked: map[string]*vcsim.VM{}, isoSizes: map[string]int64{}}
}

func (r *run) note(format string, args ...any) {
	r.events = append(r.events, fmt.Sprintf("%6.2fs %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...)))
}

func (r *run) violate(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	for _, old := range r.violations {
		if old == v {
			return
		}
	}
	r.violations = append(r.violations, v)
	r.note("VIOLATION: %s", v)
}

// drain moves the supervisor's kill notes into this run's events.
func (r *run) drain() {
	for {
		select {
		case n := <-r.notes:
			r.note("%s", n)
		default:
			return
		}
	}
}

func (r *run) execute() {
	r.start = time.Now()
	defer func() { r.took = time.Since(r.start) }()
	ctx, cancel := context.WithTimeout(r.ctx, runTimeout)
	defer cancel()
	r.ctx = ctx
	sc := scenarioNamed(r.p.Scenario)
	if err := r.setup(); err != nil {
		r.violate("setup: %v", err)
		return
	}
	defer r.cleanup()
	r.recordDemand(0)
	if err := r.watchVsphereAgents(ctx, r.c.watch); err != nil {
		r.violate("watching VsphereAgents: %v", err)
		return
	}
	r.c.moments.set(r)
	if r.c.proxy != nil {
		faultsBefore := r.c.proxy.Total()
		r.c.proxy.SetEnabled(true)
		defer func() {
			r.c.proxy.SetEnabled(false)
			r.note("API faults injected during the run: %d (campaign so far: %s)", r.c.proxy.Total()-faultsBefore, r.c.proxy)
		}()
	}
	_, _, before := r.c.hook.counts()
	r.c.hook.arm(r.s.Namespace, r.p.Kills)
	r.note("%s", r.p)
	err := sc.run(r)
	unfired, inFlight := r.c.hook.settle(time.Minute)
	_, _, after := r.c.hook.counts()
	for p, n := range after {
		r.kills += n - before[p]
	}
	unfired = append(unfired, r.c.hook.takeFailures()...)
	r.unfired = unfired
	if inFlight > 0 {
		r.violate("%d kill(s) decided but still not carried out a minute after the scenario ended", inFlight)
	}
	r.drain()
	if err != nil {
		r.violate("%v", err)
	}
	r.checkInvariants()
	r.c.moments.set(nil)
	r.takeMoments()
	r.drain()
}

// setup creates the run's hub (namespaces, HostedCluster, NodePool, InfraEnv, Secret), its ISO server,
// its world driver (VMs in the run's folder register with its InfraEnv) and the pool object (not yet
// applied).
func (r *run) setup() error {
	ns := fmt.Sprintf("chaos-%d-%d", r.c.seed%100000, r.p.Index)
	r.iso = sim.NewISOServer(sim.ISOServerOptions{Seed: uint64(r.p.Index) + 1, Size: 64 << 10, ETag: true, LastModified: true})
	r.isoSizes[r.iso.SHA256()] = r.iso.Size()
	s, err := r.c.h.Scenario(r.ctx, world.SetupOptions{Namespace: ns, HostedCluster: "hc", NodePool: "np", InfraEnv: "ie",
		AgentLabels: map[string]string{"example.com/chaos": ns}, ISOURL: r.iso.URL()})
	if err != nil {
		return err
	}
	r.s = s
	for _, f := range []string{"chaos/" + ns, backupFolder(ns)} {
		if err := r.c.h.VC.EnsureFolder(r.ctx, f); err != nil {
			return err
		}
	}
	r.prepareLimits(r.p.Scenario)
	static, err := r.prepareNet(r.p.Scenario)
	if err != nil {
		return err
	}
	ie := s.InfraEnv
	r.w, err = r.c.h.StartWorldUntil(r.ctx, world.Options{Namespaces: s.Namespaces(), StaticIP: static,
		InfraEnvFor:       func(vm world.VM) (types.NamespacedName, bool) { return ie, vm.Folder == ns },
		RegistrationDelay: 200 * time.Millisecond, ValidationDelay: 100 * time.Millisecond, InstallDelay: 300 * time.Millisecond}, 100*time.Millisecond)
	if err != nil {
		return err
	}
	r.pool = types.NamespacedName{Namespace: ns, Name: "pool"}
	return nil
}

// newPool is the shipped sample adapted to the simulator and to this run's hub.
func (r *run) newPool(mutate func(*afv1.VsphereAgentPool)) error {
	pool, err := harness.LoadSamplePool()
	if err != nil {
		return err
	}
	if _, err := r.c.h.AdaptToSimulator(r.ctx, pool); err != nil {
		return err
	}
	pool.Namespace, pool.Name = r.pool.Namespace, r.pool.Name
	pool.Spec.HostedClusterRef.Name, pool.Spec.NodePoolRef.Name, pool.Spec.InfraEnvRef.Name = "hc", "np", "ie"
	pool.Spec.ControlPlaneNamespace = r.s.ControlPlaneNamespace
	pool.Spec.VSphere.CredentialsSecretRef = afv1.SecretReference{Name: r.s.Secret.Name}
	pool.Spec.VSphere.Folder = "chaos/" + r.s.Namespace
	pool.Spec.Agent.Labels = map[string]afv1.LabelValue{}
	for k, v := range r.s.AgentLabels {
		pool.Spec.Agent.Labels[k] = afv1.LabelValue(v)
	}
	pool.Spec.Template.NumCPUs, pool.Spec.Template.MemoryMiB, pool.Spec.Template.DiskGiB = 2, 8192, 100 // assisted-service's worker minimums
	pool.Spec.ISO.EjectAfterInstall = false
	pool.Spec.Limits = nil
	if mutate != nil {
		mutate(pool)
	}
	if err := r.c.h.Client.Create(r.ctx, pool); err != nil {
		return err
	}
	r.poolUID, r.poolObj = string(pool.UID), pool.DeepCopy()
	r.note("pool created (cleanupPolicy %s, ejectAfterInstall %t)", policy(pool), pool.Spec.ISO.EjectAfterInstall)
	return nil
}

func policy(p *afv1.VsphereAgentPool) afv1.CleanupPolicy {
	if p.Spec.CleanupPolicy == "" {
		return afv1.CleanupPolicyDelete
	}
	return p.Spec.CleanupPolicy
}

// updatePool changes the pool with retries on conflict.
func (r *run) updatePool(what string, f func(*afv1.VsphereAgentPool)) error {
	var err error
	for i := 0; i < 20; i++ {
		p := &afv1.VsphereAgentPool{}
		if err = r.c.h.Client.Get(r.ctx, r.pool, p); err != nil {
			return err
		}
		f(p)
		if err = r.c.h.Client.Update(r.ctx, p); err == nil {
			r.note("pool: %s", what)
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func (r *run) scale(n int) error {
	r.note("NodePool replicas -> %d", n)
	r.recordDemand(n)
	return r.w.SetReplicas(r.ctx, r.s.NodePool, n)
}

// await polls observations until cond holds or serveBound passes (a violation of "served within a
// bound"); every observation is also checked for the invariants that must hold at every instant.
func (r *run) await(what string, cond func(*obs) bool) error {
	return r.awaitWithin(what, serveBound, cond)
}

// awaitWithin is await with a step's own bound (one the product's documented timers set). The bound
// counts from the step's start or, when the manager was restarted during the step, from the moment the
// fresh manager was ready: under load a restart alone took 10.9 s (issue 44), time in which no manager
// runs and which says nothing about how long the operator leaves demand waiting.
func (r *run) awaitWithin(what string, bound time.Duration, cond func(*obs) bool) error {
	stepStart := time.Now()
	var last *obs
	for {
		r.drain()
		o, err := r.observe()
		if err == nil {
			r.checkInstant(o)
			last = o
			if cond(o) {
				r.note("reached: %s", what)
				return nil
			}
		}
		from := stepStart
		if ready := r.c.op.readySince(); ready.After(from) {
			from = ready
		}
		if time.Now().After(from.Add(bound)) || r.ctx.Err() != nil {
			state := fmt.Sprintf("observe error %v", err)
			if last != nil {
				state = last.describe()
			}
			since := "the step's start"
			if from != stepStart {
				since = fmt.Sprintf("the manager's restart (ready %s into the step)", from.Sub(stepStart).Round(time.Millisecond))
			}
			return fmt.Errorf("not reached within %s of %s (demand not served within the bound): %s; last state: %s", bound, since, what, state)
		}
		select {
		case <-r.ctx.Done():
		case <-time.After(pollEvery):
		}
	}
}

// report is the run's timeline plus the operator's Events of its namespace.
func (r *run) report() string {
	var b strings.Builder
	for _, v := range r.violations {
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	b.WriteString("  events of the run:\n")
	for _, e := range r.events {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	var evs corev1.EventList
	if r.s != nil && r.c.h.Client.List(context.Background(), &evs, client.InNamespace(r.s.Namespace)) == nil {
		b.WriteString("  operator Events:\n")
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "    %s %s/%s %s: %s\n", harness.EventTime(&e).Format("15:04:05.000"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// cleanup leaves nothing that makes later runs slower: the run's VMs destroyed (by the test, through
// its admin session, after the checks), the pool and VsphereAgents removed with their finalizers, the
// world and ISO server stopped.
func (r *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := r.c.h
	r.destroyCopies(ctx)
	if r.poolUID != "" {
		if vms, err := h.VSphere.ListPoolVMs(ctx, vcsim.Datacenter, r.poolUID); err == nil {
			for _, vm := range vms {
				_ = h.VSphere.DestroyVM(ctx, vcsim.Datacenter, vm.InstanceUUID, vm.Ownership)
			}
		}
	}
	if r.s != nil {
		pool := &afv1.VsphereAgentPool{}
		if err := h.Client.Get(ctx, r.pool, pool); err == nil {
			_ = h.Client.Delete(ctx, pool)
			stripFinalizers(ctx, h.Client, pool)
		}
		var vas afv1.VsphereAgentList
		if h.Client.List(ctx, &vas, client.InNamespace(r.s.Namespace)) == nil {
			for i := range vas.Items {
				_ = h.Client.Delete(ctx, &vas.Items[i])
				stripFinalizers(ctx, h.Client, &vas.Items[i])
			}
		}
	}
	if r.iso != nil {
		r.iso.Close()
	}
}

func stripFinalizers(ctx context.Context, c client.Client, obj client.Object) {
	for i := 0; i < 10; i++ {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return
		}
		if len(obj.GetFinalizers()) == 0 {
			return
		}
		for _, f := range obj.GetFinalizers() {
			controllerutil.RemoveFinalizer(obj, f)
		}
		if err := c.Update(ctx, obj); err == nil || apierrors.IsNotFound(err) {
			return
		}
	}
}

// vmsOfPool lists the simulator VMs carrying this run's pool marker, except the copies the run made.
func (r *run) vmsOfPool() ([]vsphere.VMInfo, error) {
	if r.poolUID == "" {
		return nil, nil
	}
	vms, err := r.c.h.VSphere.ListPoolVMs(r.ctx, vcsim.Datacenter, r.poolUID)
	if err != nil {
		return nil, err
	}
	out := vms[:0]
	for _, vm := range vms {
		if _, isCopy := r.isCopy("", vm.InstanceUUID); !isCopy {
			out = append(out, vm)
		}
	}
	return out, nil
}
