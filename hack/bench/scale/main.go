// Command scale provisions 50 pools × 20 waiting AgentMachines (1 000 VMs) against a real API server
// (envtest) and the vCenter simulator, with the operator's controllers in-process, and measures: time
// until every AgentMachine has a bound Agent, the operator's API writes per pool, vSphere SOAP calls
// per VM, and API writes during a 30 s window with nothing changing (target 0). While demand is open it
// logs progress lines (machines rendered, VsphereAgents requested, VMs created and powered on, Agents
// registered, prepared and bound, with the operator's queues and the world driver's pass), and at the
// end names every plateau (a stage that stood still for 10 s) with the stage that held it and why
// (plateau.go). It breaks the writes down by verb and resource and the vSphere calls by method. It ends with
//
//	scale: <pools> pools, <vms> VMs, demand satisfied in <s> s, <w> API writes/VM, <c> vSphere calls/VM, <idle> writes while idle
//
// and exits non-zero when writes/VM exceed -max-writes-per-vm (6), calls/VM exceed -max-calls-per-vm (10),
// any write happened while idle, or the operator held demand idle for minPlateau or longer (a plateau
// whose cause is its own timers or a queue it did not work: nothing but the operator kept the
// AgentMachines waiting).
//
// Flags: -pools, -per-pool, -idle (window), -timeout, -max-writes-per-vm, -max-calls-per-vm.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// providerWorkers, poolWorkers and serialWorld are the -provider-workers, -pool-workers and -serial-world flags.
var (
	providerWorkers *int
	poolWorkers     *int
	serialWorld     *bool
	// maxWrites and maxCalls are the budgets per VM the bench fails above (issue #28).
	maxWrites, maxCalls *float64
)

// sampleEvery spaces progress samples (every other one is logged); minPlateau is how long a stage
// must stand still to be named as a plateau (and, when the operator held it idle, to fail the bench).
const (
	sampleEvery = 2500 * time.Millisecond
	minPlateau  = 10 * time.Second
)

func main() {
	os.Exit(benchScale())
}

// benchScale is main's body; it returns the exit code, so that its deferred calls (the CPU profile's
// flush, the signal handler's and the timeout's release) run before the process exits.
func benchScale() int {
	pools := flag.Int("pools", 50, "number of pools (one HostedCluster namespace pair each)")
	perPool := flag.Int("per-pool", 20, "waiting AgentMachines per pool")
	idle := flag.Duration("idle", 30*time.Second, "no-change window in which the operator's writes are counted")
	timeout := flag.Duration("timeout", 30*time.Minute, "overall bound")
	bindTimeout := flag.Duration("bind-timeout", 25*time.Minute, "bound on the time until every Agent is bound")
	providerWorkers = flag.Int("provider-workers", 10, "workers of the simulated Agent CAPI provider (upstream: 1)")
	poolWorkers = flag.Int("pool-workers", 0, "the pool controller's workers (0: the operator's default, 4)")
	serialWorld = flag.Bool("serial-world", false, "run the world as one serial pass reading from the API server (as before the loops), to compare")
	maxWrites = flag.Float64("max-writes-per-vm", 6, "fail when the operator's API writes per VM exceed this")
	maxCalls = flag.Float64("max-calls-per-vm", 10, "fail when the operator's vSphere calls per VM exceed this")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (operator + world + sampler) to this file")
	flag.Parse()
	ctrllog.SetLogger(reconcileErrs.logger())
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench-scale: cpu profile:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := run(ctx, *pools, *perPool, *idle, *bindTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		return 1
	}
	return 0
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, nPools, perPool int, idle, bindTimeout time.Duration) error {
	h, samplePool, err := harness.StartBench(ctx, func(m string) { logf("%s", m) })
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping everything")
		if err := h.Close(); err != nil {
			logf("cleanup: %v", err)
		}
	}()
	logf("creating %d hub scenarios (namespace pair, HostedCluster, NodePool, InfraEnv, Secret each)", nPools)
	var scenarios []*world.Scenario
	var namespaces []string
	for i := 0; i < nPools; i++ {
		ns := fmt.Sprintf("bench-%02d", i)
		s, err := h.Scenario(ctx, world.SetupOptions{Namespace: ns, HostedCluster: "hc", NodePool: "np", InfraEnv: "ie",
			AgentLabels: map[string]string{harness.BenchPoolLabel: ns}})
		if err != nil {
			return err
		}
		scenarios = append(scenarios, s)
		namespaces = append(namespaces, s.Namespaces()...)
	}
	// The world reads as the real controllers do, from informer caches (watches), not by listing a
	// thousand objects of each kind from the API server every pass.
	worldCache, err := cache.New(h.Env.Config, cache.Options{Scheme: h.Env.Scheme})
	if err != nil {
		return err
	}
	cacheCtx, stopCache := context.WithCancel(ctx)
	defer stopCache()
	go func() { _ = worldCache.Start(cacheCtx) }()
	if !worldCache.WaitForCacheSync(ctx) {
		return fmt.Errorf("the world's cache did not sync")
	}
	// The world runs as the real systems do: HyperShift/CAPI, assisted-service and the Agent CAPI
	// provider each in its own loop, each working ten objects at once (CAPI's default concurrency).
	// The upstream provider has one worker; with one, binding the AgentMachines alone takes most of the
	// run (docs/performance.md, "The world as the real systems run"), which would hide the operator's
	// pace: -provider-workers 1 measures that.
	wo := world.Options{Namespaces: namespaces, InstallDelay: time.Second, Loops: true, Reader: worldCache, Workers: 10, ProviderWorkers: *providerWorkers}
	if *serialWorld { // the world before: one serial pass of every behaviour, lists from the API server
		wo = world.Options{Namespaces: namespaces, InstallDelay: time.Second, Reader: h.Client}
	}
	wo.InfraEnvFor = harness.BenchInfraEnv
	w, err := h.StartWorld(wo, 500*time.Millisecond)
	if err != nil {
		return err
	}

	writes := &apiWrites{}
	var soapN atomic.Int64
	soapByMethod, soapBySite := &methodCounts{}, &methodCounts{}
	sessions := vsphere.NewSessions(vsphere.SessionOptions{WrapRoundTripper: func(rt soap.RoundTripper) soap.RoundTripper {
		return soapCalls{RoundTripper: rt, n: &soapN, byMethod: soapByMethod, bySite: soapBySite}
	}})
	if _, err := h.StartManagerInProcess(harness.InProcessOptions{
		Controllers: controllers.Options{Services: controllers.Services{Sessions: sessions}, Settings: controllers.Settings{PoolWorkers: *poolWorkers}},
		WrapConfig: func(c *rest.Config) {
			c.QPS = -1 // as the manager binary: no client-side throttling, the API server's fairness decides
			c.WrapTransport = writes.wrap
		},
	}); err != nil {
		return err
	}

	for _, s := range scenarios {
		p := harness.BenchPool(samplePool, s)
		if err := h.Client.Create(ctx, p); err != nil {
			return fmt.Errorf("creating pool %s: %w", s.Namespace, err)
		}
	}
	logf("created %d pools; waiting for every pool to cache its discovery ISO", nPools)
	if err := poll(ctx, 5*time.Minute, func() (bool, string, error) {
		var list afv1.VsphereAgentPoolList
		if err := h.Client.List(ctx, &list); err != nil {
			return false, "", err
		}
		n := 0
		for _, p := range list.Items {
			if p.Status.ISO != nil && p.Status.ISO.Path != "" {
				n++
			}
		}
		return n == nPools, fmt.Sprintf("%d/%d pools have their ISO cached", n, nPools), nil
	}); err != nil {
		return err
	}

	vc, err := h.VC.Login(ctx) // the bench's own session: its calls are not the operator's
	if err != nil {
		return err
	}
	defer func() { _ = vc.Logout(context.WithoutCancel(ctx)) }()

	changesCtx, stopChanges := context.WithCancel(ctx)
	defer stopChanges()
	changes, err := watchVsphereAgents(changesCtx, h.Env.Config, client.Options{Scheme: h.Env.Scheme})
	if err != nil {
		return err
	}
	writesBefore, soapBefore := writes.total.Load(), soapN.Load()
	conflictsBefore, soapMethodsBefore, soapSitesBefore := writes.conflicts.Load(), soapByMethod.snapshot(), soapBySite.snapshot()
	retriesBefore := readRetries(ctrlmetrics.Registry, reconcileErrs)
	phasesBefore := readPhaseTimes(ctrlmetrics.Registry)
	writes.record()
	logf("autoscaler: %d NodePools 0 -> %d at once", nPools, perPool)
	requestsBefore, err := apiServerRequests(ctx, h.Env.Config)
	if err != nil {
		return err
	}
	cpuBefore := cpuSeconds()
	start := time.Now()
	for _, s := range scenarios { // the world renders the Machines on its next pass, as HyperShift would
		if err := setReplicas(ctx, h.Client, s.NodePool, perPool); err != nil {
			return err
		}
	}
	want := nPools * perPool
	progress := &sampler{c: worldCache, vc: vc.Client, gatherer: ctrlmetrics.Registry, world: w, start: start,
		throttled: func() int { return int(writes.throttled.Load()) }}
	logf("progress every %s: the pipeline (machines, asked (AgentMachines the provider marked NoSuitableAgents or bound) and registered/bound: the world; requested, created, powered on, prepared: the operator), the operator's queues, the world's pass", 2*sampleEvery)
	bindCtx, cancelBind := context.WithTimeout(ctx, bindTimeout)
	err = progress.run(bindCtx, sampleEvery, 2, func(s sample) bool { return s.Counts[stageBound] >= want })
	cancelBind()
	if err != nil {
		explainStall(ctx, h.Client, perPool)
		readPhaseTimes(ctrlmetrics.Registry).logSince(phasesBefore)
		return fmt.Errorf("waiting for %d bound Agents: %w", want, err)
	}
	satisfied := time.Since(start)
	logf("CPU used until demand was satisfied (%d cores here), by process:", runtime.NumCPU())
	for _, l := range cpuUsed(cpuBefore, cpuSeconds()) {
		logf("  %s", l)
	}
	if requestsAfter, err := apiServerRequests(ctx, h.Env.Config); err == nil {
		logf("requests the API server served until then (every client), by verb and resource, top 15:")
		for _, t := range requestsSince(requestsBefore, requestsAfter, 15) {
			logf("  %7d  %s", t.n, t.what)
		}
	} else {
		logf("note: %v", err)
	}
	logf("demand satisfied in %.1fs; waiting for the world to finish installing and go quiet", satisfied.Seconds())

	vms := 0
	if err := poll(ctx, 5*time.Minute, func() (bool, string, error) {
		before := w.Writes()
		time.Sleep(3 * time.Second)
		installed, err := installedAgents(ctx, h.Client)
		if err != nil {
			return false, "", err
		}
		return installed == want && w.Writes() == before, fmt.Sprintf("%d/%d installed, world wrote %d in 3s", installed, want, w.Writes()-before), nil
	}); err != nil {
		return err
	}
	// Let the operator finish what the last changes started (its Event sink posts one Event at a time,
	// so under load it drains a backlog after the world went quiet) before the window opens.
	settleStart := time.Now()
	if err := poll(ctx, 3*time.Minute, func() (bool, string, error) {
		before := writes.total.Load()
		time.Sleep(5 * time.Second)
		n := writes.total.Load() - before
		return n == 0, fmt.Sprintf("operator wrote %d times in 5s", n), nil
	}); err != nil {
		return err
	}
	logf("operator settled %.0fs after the world went quiet", time.Since(settleStart).Seconds()-5)
	if vms, err = countVMs(ctx, h.Client, vc.Client, perPool); err != nil {
		return err
	}
	provisionWrites, provisionSOAP := writes.total.Load()-writesBefore, soapN.Load()-soapBefore

	logf("operator live API reads while provisioning (GET/LIST not served by its cache), by resource:")
	logByKind(writes.liveReads(), nPools, vms)
	logf("operator API writes while provisioning, by verb and resource (%d conflicts):", writes.conflicts.Load()-conflictsBefore)
	events := writes.events()
	logByKind(writes.stop(), nPools, vms)
	stopChanges()
	changes.log(vms)
	logf("operator Events created while provisioning, by reason:")
	for _, t := range events {
		logf("  %6d  %-40s %7.1f/pool  %5.2f/VM", t.n, t.what, float64(t.n)/float64(max(nPools, 1)), float64(t.n)/float64(max(vms, 1)))
	}
	logf("operator vSphere calls while provisioning, by method:")
	for _, t := range soapByMethod.since(soapMethodsBefore) {
		logf("  %6d  %-40s %5.2f/VM", t.n, t.what, float64(t.n)/float64(max(vms, 1)))
	}
	logf("operator vSphere calls while provisioning, by method and call site, top 15:")
	for i, t := range soapBySite.since(soapSitesBefore) {
		if i == 15 {
			break
		}
		logf("  %6d  %5.2f/VM  %s", t.n, float64(t.n)/float64(max(vms, 1)), t.what)
	}
	retries := readRetries(ctrlmetrics.Registry, reconcileErrs).since(retriesBefore)
	retries.log(vms)
	readPhaseTimes(ctrlmetrics.Registry).logSince(phasesBefore)
	retries.logSurplus(ctx, h.Client, want)
	logf("idle window: %s with nothing changing (world quiet, demand satisfied)", idle)
	worldBefore := w.Writes()
	writes.record()
	idleStart := writes.total.Load()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idle):
	}
	idleWrites := writes.total.Load() - idleStart
	targets := writes.stop()
	if wd := w.Writes() - worldBefore; wd != 0 {
		logf("note: the world wrote %d times during the window (not idle on its side)", wd)
	}
	if idleWrites > 0 {
		logf("operator writes while idle, by verb and resource:")
		logByKind(targets, 1, 0)
		logf("most written objects:")
		for i, t := range targets {
			if i == 10 {
				break
			}
			logf("  %6d  %s", t.n, t.what)
		}
	}
	if vms != want {
		logf("WARNING: %d VMs carry the pools' markers, want %d", vms, want)
	}
	ps := plateaus(progress.all(), want, minPlateau)
	if len(ps) == 0 {
		logf("no plateau: every stage moved at least every %s", minPlateau)
	}
	for _, p := range ps {
		logf("%s", p)
	}
	writesPerVM := float64(provisionWrites) / float64(max(vms, 1))
	callsPerVM := float64(provisionSOAP) / float64(max(vms, 1))
	logf("API writes per pool: %.0f", float64(provisionWrites)/float64(nPools))
	fmt.Printf("scale: %d pools, %d VMs, demand satisfied in %.1f s, %.2f API writes/VM, %.2f vSphere calls/VM, %d writes while idle\n",
		nPools, vms, satisfied.Seconds(), writesPerVM, callsPerVM, idleWrites)
	return overBudget(writesPerVM, callsPerVM, idleWrites, *maxWrites, *maxCalls, ps)
}

// overBudget is the bench's verdict: an error naming every figure above its budget.
func overBudget(writesPerVM, callsPerVM float64, idleWrites int64, maxWrites, maxCalls float64, ps []plateau) error {
	var over []string
	for _, p := range ps {
		if p.OperatorIdle {
			over = append(over, fmt.Sprintf("the operator held %s idle for %.0f s (%s)", p.Stage, (p.To-p.From).Seconds(), p.Cause))
		}
	}
	if writesPerVM > maxWrites {
		over = append(over, fmt.Sprintf("%.2f API writes/VM > %.0f", writesPerVM, maxWrites))
	}
	if callsPerVM > maxCalls {
		over = append(over, fmt.Sprintf("%.2f vSphere calls/VM > %.0f", callsPerVM, maxCalls))
	}
	if idleWrites > 0 {
		over = append(over, fmt.Sprintf("%d writes while idle > 0", idleWrites))
	}
	if len(over) > 0 {
		return fmt.Errorf("over budget: %s", strings.Join(over, ", "))
	}
	return nil
}

// poll calls f every 2s (logging its progress line every 10s) until it reports done, errs or timeout passes.
func poll(ctx context.Context, timeout time.Duration, f func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	var lastLog time.Time
	for {
		done, progress, err := f()
		if err != nil && transientAPIError(err) {
			// A saturated API server (CAPI at its default flags serves thousands of Machine status patches)
			// may time a list out; the bench's own reads try again within the poll's deadline.
			done, progress = false, "API server busy: "+err.Error()
		} else if err != nil {
			return err
		}
		if done {
			logf("%s", progress)
			return nil
		}
		if time.Since(lastLog) > 10*time.Second {
			logf("%s", progress)
			lastLog = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %s", timeout, progress)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// transientAPIError reports an API server answer that says "not now" (timeouts, 429, 503), not "no".
func transientAPIError(err error) bool {
	return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err)
}

func listAgents(ctx context.Context, c client.Client) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(world.AgentGVK.GroupVersion().WithKind("AgentList"))
	if err := c.List(ctx, l, client.HasLabels{afv1.LabelPool}); err != nil {
		return nil, err
	}
	return l.Items, nil
}

func installedAgents(ctx context.Context, c client.Client) (int, error) {
	agents, err := listAgents(ctx, c)
	n := 0
	for _, a := range agents {
		if unstructuredcond.IsTrue(&a, world.CondInstalled) {
			n++
		}
	}
	return n, err
}

// countVMs counts the simulator VMs carrying a pool's ownership marker (one listing for every pool),
// and logs per pool a count other than want, and VMs whose instance UUID names no VsphereAgent.
func countVMs(ctx context.Context, c client.Client, vc *vim25.Client, want int) (int, error) {
	var pools afv1.VsphereAgentPoolList
	if err := c.List(ctx, &pools); err != nil {
		return 0, err
	}
	var vas afv1.VsphereAgentList
	if err := c.List(ctx, &vas); err != nil {
		return 0, err
	}
	poolOf := map[string]*afv1.VsphereAgentPool{}
	for i := range pools.Items {
		poolOf[string(pools.Items[i].UID)] = &pools.Items[i]
	}
	vaUIDs := map[string]bool{}
	phases := map[string]map[afv1.VMPhase]int{}
	for _, va := range vas.Items {
		vaUIDs[strings.ToLower(string(va.UID))] = true
		if phases[va.Namespace] == nil {
			phases[va.Namespace] = map[afv1.VMPhase]int{}
		}
		phases[va.Namespace][va.Status.VM.Phase]++
	}
	v, err := view.NewManager(vc).CreateContainerView(ctx, vc.ServiceContent.RootFolder, []string{"VirtualMachine"}, true)
	if err != nil {
		return 0, err
	}
	defer func() { _ = v.Destroy(context.WithoutCancel(ctx)) }()
	var vms []mo.VirtualMachine
	if err := v.Retrieve(ctx, []string{"VirtualMachine"}, []string{"name", "config.instanceUuid", "config.extraConfig"}, &vms); err != nil {
		return 0, err
	}
	perPool := map[string]int{}
	n := 0
	for _, vm := range vms {
		if vm.Config == nil {
			continue
		}
		poolUID := ""
		for _, o := range vm.Config.ExtraConfig {
			if ov := o.GetOptionValue(); ov.Key == vsphere.ExtraConfigPoolUID {
				poolUID, _ = ov.Value.(string)
			}
		}
		p := poolOf[poolUID]
		if p == nil {
			continue
		}
		n++
		perPool[string(p.UID)]++
		if !vaUIDs[strings.ToLower(vm.Config.InstanceUuid)] {
			logf("%s: VM %s (instance UUID %s) carries the pool's marker but has no VsphereAgent", p.Namespace, vm.Name, vm.Config.InstanceUuid)
		}
	}
	for _, p := range pools.Items {
		if got := perPool[string(p.UID)]; got != want {
			logf("%s: %d VMs for %d AgentMachines (VsphereAgent phases %v, pool status waiting=%d available=%d bound=%d, planned %v)",
				p.Namespace, got, want, phases[p.Namespace], p.Status.WaitingAgentMachines, p.Status.AvailableAgents,
				p.Status.BoundAgents, p.Status.PlannedActions)
		}
	}
	return n, nil
}

// setReplicas patches a NodePool's spec.replicas, as the cluster autoscaler does.
func setReplicas(ctx context.Context, c client.Client, key types.NamespacedName, n int) error {
	np := &unstructured.Unstructured{}
	np.SetGroupVersionKind(world.NodePoolGVK)
	np.SetNamespace(key.Namespace)
	np.SetName(key.Name)
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
	return c.Patch(ctx, np, client.RawPatch(types.MergePatchType, patch))
}

// logByKind prints writes by verb and resource: in total, per pool and (with vms > 0) per VM.
func logByKind(targets []target, pools, vms int) {
	byKind := map[string]int{}
	for _, t := range targets {
		byKind[kindOf(t.what)] += t.n
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		return byKind[kinds[i]] > byKind[kinds[j]] || (byKind[kinds[i]] == byKind[kinds[j]] && kinds[i] < kinds[j])
	})
	for _, k := range kinds {
		n := byKind[k]
		line := fmt.Sprintf("  %6d  %-40s %7.1f/pool", n, k, float64(n)/float64(max(pools, 1)))
		if vms > 0 {
			line += fmt.Sprintf("  %5.2f/VM", float64(n)/float64(vms))
		}
		logf("%s", line)
	}
}

// explainStall prints, for each pool short of its demand, its counters, conditions and VMs by phase.
func explainStall(ctx context.Context, c client.Client, perPool int) {
	var pools afv1.VsphereAgentPoolList
	if err := c.List(ctx, &pools); err != nil {
		logf("stall: listing pools: %v", err)
		return
	}
	for _, p := range pools.Items {
		if p.Status.BoundAgents >= int32(perPool) {
			continue
		}
		logf("stall: pool %s/%s waiting=%d bound=%d available=%d vms=%d", p.Namespace, p.Name,
			p.Status.WaitingAgentMachines, p.Status.BoundAgents, p.Status.AvailableAgents, p.Status.VMs)
		for _, cond := range p.Status.Conditions {
			logf("stall:   condition %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
		var vas afv1.VsphereAgentList
		if err := c.List(ctx, &vas, client.InNamespace(p.Namespace)); err != nil {
			continue
		}
		for _, va := range vas.Items {
			if va.Status.VM.Phase == afv1.VMPhaseBound {
				continue
			}
			msg := ""
			for _, cond := range va.Status.Conditions {
				if cond.Status != "True" {
					msg += fmt.Sprintf(" %s=%s(%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message)
				}
			}
			logf("stall:   vm %s phase=%s reason=%s agent=%s deleting=%t%s", va.Name, va.Status.VM.Phase, va.Status.VM.Reason,
				va.Status.VM.AgentName, !va.DeletionTimestamp.IsZero(), msg)
		}
	}
}
