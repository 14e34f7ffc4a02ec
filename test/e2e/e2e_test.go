package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

const (
	testTimeout   = 3 * time.Minute
	plateauWait   = 60 * time.Second
	pollInterval  = 250 * time.Millisecond
	ejectGrace    = 5 * time.Second
	ejectDeadline = 30 * time.Second
)

type e2e struct {
	t        *testing.T
	h        *harness.Harness
	tr       *harness.Tracker
	w        *world.Driver
	s        *world.Scenario
	mgr      *harness.InProcessManager
	pool     types.NamespacedName
	nodePool types.NamespacedName
	// backingSeen are the Machines already reported for a destroyed backing VM (each once).
	backingSeen map[string]bool
	// ejectOptIn is the pool's spec.iso.ejectAfterInstall: then every installed worker's ISO must be ejected.
	ejectOptIn bool
}

func TestScaleUpInstallEjectScaleDown(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	start := time.Now()
	e := startE2E(ctx, t, e2eOptions{})
	t.Logf("started in %.1fs", time.Since(start).Seconds())

	e.await(ctx, "the discovery ISO cached", plateauWait, func(s *harness.Snapshot) bool { return s.Pool.Status.ISO != nil && s.Pool.Status.ISO.Path != "" })
	for _, step := range []struct{ from, to int }{{0, 2}, {2, 3}} {
		e.scale(ctx, step.to)
		e.await(ctx, fmt.Sprintf("scale %d -> %d", step.from, step.to), plateauWait, func(s *harness.Snapshot) bool { return s.ScaledUp(step.to) })
		e.hold(ctx, step.to)
	}
	e.await(ctx, "3 workers installed", plateauWait, func(s *harness.Snapshot) bool { return s.Installed() == 3 })
	e.checkEjection(ctx, 3)
	e.scale(ctx, 1)
	e.await(ctx, "scale 3 -> 1 cleaned up", plateauWait, func(s *harness.Snapshot) bool { return s.ScaledDown(1) })
	e.hold(ctx, 1)
	e.finish("e2e", 3, 1)
	t.Logf("scenario took %.1fs", time.Since(start).Seconds())
}

// e2eOptions vary the stack a scenario runs on.
type e2eOptions struct {
	// Provider is the Agent CAPI provider generation the world plays; LegacyAgentProvider installs the
	// AgentMachine CRD that generation's hubs run.
	Provider            world.ProviderGeneration
	LegacyAgentProvider bool
	// BindingDisabled starts the world's provider with automatic binding off.
	BindingDisabled bool
}

// startE2E brings up the API server, real CAPI core, the simulator, the world and the operator in process,
// and creates the sample pool adapted to the simulator.
func startE2E(ctx context.Context, t *testing.T, o e2eOptions) *e2e {
	t.Helper()
	h, err := harness.Start(ctx, harness.Options{Progress: func(msg string) { t.Log(msg) }, LegacyAgentProvider: o.LegacyAgentProvider})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("harness cleanup: %v", err)
		}
	})
	pool, err := harness.LoadSamplePool()
	if err != nil {
		t.Fatal(err)
	}
	changes, err := h.AdaptToSimulator(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sample adapted to the simulator: %v", changes)
	s, err := h.Scenario(ctx, world.SetupOptions{
		Namespace: pool.Namespace, HostedCluster: pool.Spec.HostedClusterRef.Name, NodePool: pool.Spec.NodePoolRef.Name,
		InfraEnv: pool.Spec.InfraEnvRef.Name, AgentLabels: pool.Spec.Agent.LabelSet(), SecretName: pool.Spec.VSphere.CredentialsSecretRef.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
	pool.Spec.ControlPlaneNamespace = s.ControlPlaneNamespace
	ie := s.InfraEnv
	w, err := h.StartWorld(world.Options{Namespaces: s.Namespaces(), InfraEnv: &ie, Provider: o.Provider, BindingDisabled: o.BindingDisabled,
		RegistrationDelay: 300 * time.Millisecond, ValidationDelay: 200 * time.Millisecond, InstallDelay: time.Second}, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	e := &e2e{t: t, h: h, tr: harness.NewTracker(), w: w, s: s, pool: types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}, nodePool: s.NodePool,
		backingSeen: map[string]bool{}, ejectOptIn: pool.Spec.ISO.EjectAfterInstall}
	e.startManager()
	if err := h.Client.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return e
}

// startManager runs the operator's controllers in this process (again, after stopManager).
func (e *e2e) startManager() {
	e.t.Helper()
	m, err := e.h.StartManagerInProcess(harness.InProcessOptions{Controllers: controllers.Options{Settings: controllers.Settings{
		DebounceIdle: 200 * time.Millisecond, DebounceMax: 2 * time.Second,
	}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.mgr = m
}

// stopManager stops the operator and waits for it to return.
func (e *e2e) stopManager() {
	e.t.Helper()
	if err := e.mgr.Stop(); err != nil {
		e.t.Fatal(err)
	}
}

// finish checks what the whole run must show after peaking at peak VMs and scaling down to final: no
// leaked VM, never more VMs than the peak, no VM destroyed under demand, peak VMs created and the
// difference cleaned up; then it reports the violations and the tracker's summary line.
func (e *e2e) finish(name string, peak, final int) {
	e.t.Helper()
	for _, leak := range e.tr.Last().Leaks() {
		e.tr.Violate("leaked VM: %s", leak)
	}
	if e.tr.MaxVMs() > peak {
		e.tr.Violate("the simulator held %d VMs at one time; the NodePool never asked for more than %d", e.tr.MaxVMs(), peak)
	}
	for _, vm := range e.tr.DestroyedUnderDemand() {
		e.tr.Violate("VM %s was destroyed while AgentMachines were still waiting", vm)
	}
	if c := e.tr.Created(); c != peak {
		e.tr.Violate("%d VMs were created for a NodePool that peaked at %d", c, peak)
	}
	if c := e.tr.CleanedUp(); c != peak-final {
		e.tr.Violate("%d VMs cleaned up after %d -> %d, want %d", c, peak, final, peak-final)
	}
	for _, v := range e.tr.Violations() {
		e.t.Errorf("invariant violated: %s", v)
	}
	e.t.Log(e.tr.Summary(name))
}

func (e *e2e) scale(ctx context.Context, n int) {
	e.t.Helper()
	if err := e.w.SetReplicas(ctx, e.nodePool, n); err != nil {
		e.t.Fatal(err)
	}
}

// observe takes a snapshot, records it and checks, as the demo does at every snapshot, that no Machine
// (live or being deleted) lost the VM behind its Agent: CAPI's MachineSet picks which Machines go on
// scale-down, and the operator may destroy only the VMs of Machines that are gone. Observe lists the VMs
// before the Machines, so a Machine seen without its VM still existed after the VM was gone.
func (e *e2e) observe(ctx context.Context) (*harness.Snapshot, error) {
	s, err := e.h.Observe(ctx, e.pool, e.w, e.nodePool)
	if err != nil {
		return nil, err
	}
	e.tr.Observe(s)
	hosts := map[string]bool{}
	for _, vm := range s.VMs {
		hosts[world.AgentNameFor(vm.BIOSUUID)] = true
	}
	for _, m := range s.Machines {
		if _, agent, ok := strings.Cut(m.Agent, "/"); ok && !hosts[agent] && !e.backingSeen[m.Name] {
			e.backingSeen[m.Name] = true
			e.tr.Violate("Machine %s (deleting: %t) is backed by Agent %s whose VM is gone: a VM backing an existing Machine was destroyed", m.Name, m.Deleting, agent)
		}
	}
	return s, nil
}

// await polls snapshots until cond holds; on timeout it fails with the last state and recent events.
func (e *e2e) await(ctx context.Context, what string, timeout time.Duration, cond func(*harness.Snapshot) bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s, err := e.observe(ctx)
		if err != nil {
			e.t.Fatalf("%s: observing: %v", what, err)
		}
		if cond(s) {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			e.t.Fatalf("%s: not reached within %s: %s\nrecent events:\n%s", what, timeout, s.Describe(), recentEvents(s, 15))
		}
		time.Sleep(pollInterval)
	}
}

// hold observes for a moment and flags the VM count leaving n.
func (e *e2e) hold(ctx context.Context, n int) {
	e.t.Helper()
	until := time.Now().Add(time.Second)
	for time.Now().Before(until) {
		s, err := e.observe(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(s.VMs) != n {
			e.tr.Violate("plateau %d: the simulator had %d VMs", n, len(s.VMs))
			return
		}
		time.Sleep(pollInterval)
	}
}

// checkEjection requires, when the pool opts in (spec.iso.ejectAfterInstall), that ejection started and
// finished on all n workers within ejectDeadline: a build that never ejects fails. Without the opt-in,
// ejection is required only once some VM shows it started (EjectionInProgress/Ejected).
func (e *e2e) checkEjection(ctx context.Context, n int) {
	e.t.Helper()
	required := func() bool { return e.ejectOptIn || e.tr.EjectStarted() }
	start := time.Now()
	for {
		s, err := e.observe(ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if s.EjectedNow() == n {
			break
		}
		wait := ejectGrace
		if required() {
			wait = ejectDeadline
		}
		if time.Since(start) > wait {
			switch {
			case !required():
				e.t.Logf("no VM started ejecting (%s) and the pool did not opt in: not a failure", s.EjectionReasons())
			case !e.tr.EjectStarted():
				e.tr.Violate("ISO ejection never started although the pool opts in (spec.iso.ejectAfterInstall): 0 of %d VMs ejected within %s (%s)", n, ejectDeadline, s.EjectionReasons())
			default:
				e.tr.Violate("ISO ejection missing: %d of %d VMs ejected within %s (%s)", s.EjectedNow(), n, ejectDeadline, s.EjectionReasons())
			}
			break
		}
		time.Sleep(pollInterval)
	}
	for _, name := range e.tr.Last().EjectedButAttached() {
		e.tr.Violate("VsphereAgent %s reports Ejected but its VM still has the ISO connected", name)
	}
}

func recentEvents(s *harness.Snapshot, n int) string {
	evs := s.Events
	if len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", ev.Type, ev.Reason, ev.InvolvedObject.Name, ev.Message)
	}
	return b.String()
}
