// Command latency measures how much sooner a waiting AgentMachine gets an Agent with warm standby: the time
// from an AgentMachine waiting with NoSuitableAgents to its Agent bound (not a pending pod's whole wait:
// the installation and node join after the bind are outside it, docs/standby.md), on pools without
// standby and pools with spec.standby N side by side in one run (same bursts, same world delays), and
// what the standby costs in VM-hours.
//
// It runs on a real API server (envtest), the vCenter simulator in its own process, CAPI core, the
// world driver (HyperShift, the Agent CAPI provider, assisted-service) and the operator in-process, with
// the world's discovery boot (power-on to registration) and validation set to realistic delays
// (docs/standby.md, "Latency"). Half the pools have no standby, half standby N; pool i of one half and
// pool i of the other get the same burst sizes. Each burst waits until every standby pool is full, then
// raises every NodePool by 1..-burst-max at once and waits until every AgentMachine is bound. It ends with
//
//	constants: discovery boot <d> (<source>), validation <d> (<source>), installation <d> (<source>)
//	latency: <pools> pools, reserved p50 <s> p99 <s>, node-ready p50 <s> p99 <s> with standby N vs reserved p50 <s> p99 <s>, node-ready p50 <s> p99 <s> without; standby saves ...
//
// and exits non-zero when a burst is not fully bound or standby is not -min-ratio (10) times faster at p50.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// config is the command's flags.
type config struct {
	pools, standby, bursts, burstMax  int
	registration, validation, install time.Duration
	burstTimeout, worldInterval       time.Duration
	minRatio                          float64
	seed                              uint64
}

func main() {
	var c config
	flag.IntVar(&c.pools, "pools", 10, "pools in all (even): half without standby, half with -standby")
	flag.IntVar(&c.standby, "standby", 2, "spec.standby of the pools with standby")
	flag.IntVar(&c.bursts, "bursts", 3, "bursts of demand")
	flag.IntVar(&c.burstMax, "burst-max", 3, "a burst raises each NodePool by 1 to this many replicas")
	flag.DurationVar(&c.registration, "registration-delay", 60*time.Second, "the world's discovery boot: VM powered on until its Agent registers")
	flag.DurationVar(&c.validation, "validation-delay", 20*time.Second, "the world's validation: Agent registered until Validated=True")
	flag.DurationVar(&c.install, "install-delay", 240*time.Second, "the world's installation: Agent bound until its Node joins Ready")
	flag.DurationVar(&c.worldInterval, "world-interval", 200*time.Millisecond,
		"pause between two runs of each world loop (the real provider reacts to watch events and requeues a conflict within milliseconds)")
	flag.DurationVar(&c.burstTimeout, "burst-timeout", 10*time.Minute, "bound on one burst's binding and on each standby fill")
	flag.Float64Var(&c.minRatio, "min-ratio", 10, "fail unless standby is at least this many times faster at p50")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the burst sizes")
	timeout := flag.Duration("timeout", 30*time.Minute, "overall bound")
	flag.Parse()
	if c.pools < 2 || c.pools%2 != 0 || c.standby < 1 || c.bursts < 1 || c.burstMax < 1 {
		fmt.Fprintln(os.Stderr, "bench-latency: -pools must be even and >= 2; -standby, -bursts and -burst-max >= 1")
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	err := run(ctx, c)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-latency:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// benchPool is one pool of the run.
type benchPool struct {
	arm      arm
	scenario *world.Scenario
	replicas int
}

func run(ctx context.Context, c config) error {
	h, sample, err := harness.StartBench(ctx, func(m string) { logf("%s", m) })
	if err != nil {
		return err
	}
	defer func() {
		logf("stopping everything")
		if err := h.Close(); err != nil {
			logf("cleanup: %v", err)
		}
	}()

	half := c.pools / 2
	pools := make([]*benchPool, 0, c.pools)
	armOf := map[string]arm{}
	var namespaces []string
	for i := range c.pools {
		a, name := armWithout, fmt.Sprintf("lat-without-%02d", i)
		if i >= half {
			a, name = armWith, fmt.Sprintf("lat-with-%02d", i-half)
		}
		s, err := h.Scenario(ctx, world.SetupOptions{Namespace: name, HostedCluster: "hc", NodePool: "np", InfraEnv: "ie",
			AgentLabels: map[string]string{harness.BenchPoolLabel: name}})
		if err != nil {
			return err
		}
		pools = append(pools, &benchPool{arm: a, scenario: s})
		for _, ns := range s.Namespaces() {
			armOf[ns] = a
			namespaces = append(namespaces, ns)
		}
	}

	// The world and the bench read from informer caches, as the real controllers do.
	wc, err := cache.New(h.Env.Config, cache.Options{Scheme: h.Env.Scheme})
	if err != nil {
		return err
	}
	tr := newTracker(wc, armOf)
	if err := tr.start(ctx); err != nil {
		return err
	}
	cacheCtx, stopCache := context.WithCancel(ctx)
	defer stopCache()
	go func() { _ = wc.Start(cacheCtx) }()
	if !wc.WaitForCacheSync(ctx) {
		return fmt.Errorf("the bench's cache did not sync")
	}
	w, err := h.StartWorld(world.Options{Namespaces: namespaces, Loops: true, Reader: wc, Workers: 10,
		RegistrationDelay: c.registration, ValidationDelay: c.validation, InstallDelay: c.install,
		InfraEnvFor: harness.BenchInfraEnv}, c.worldInterval)
	if err != nil {
		return err
	}
	if _, err := h.StartManagerInProcess(harness.InProcessOptions{}); err != nil {
		return err
	}
	for _, p := range pools {
		pool := harness.BenchPool(sample, p.scenario)
		if p.arm == armWith {
			pool.Spec.Standby = int32(c.standby)
		}
		if err := h.Client.Create(ctx, pool); err != nil {
			return fmt.Errorf("creating pool %s: %w", p.scenario.Namespace, err)
		}
	}
	logf("created %d pools (%d without standby, %d with standby %d); world: discovery boot %s, validation %s",
		c.pools, half, half, c.standby, c.registration, c.validation)

	sampler := &standbySampler{tr: tr, every: time.Second}
	samplerCtx, stopSampler := context.WithCancel(ctx)
	samplerDone := sampler.start(samplerCtx)
	defer func() { stopSampler(); <-samplerDone }()

	rng := rand.New(rand.NewPCG(c.seed, 0))
	sizes := make([][]int, c.bursts) // [burst][pair]
	for b := range sizes {
		for range half {
			sizes[b] = append(sizes[b], 1+rng.IntN(c.burstMax))
		}
	}
	want := map[arm]int{}
	var windowStart time.Time
	for b := range c.bursts {
		fill := time.Now()
		if err := waitStandby(ctx, tr, pools, c.standby, c.burstTimeout); err != nil {
			return fmt.Errorf("before burst %d: %w", b+1, err)
		}
		logf("burst %d: every standby pool has %d ready Agents (waited %.0f s)", b+1, c.standby, time.Since(fill).Seconds())
		if b == 0 {
			windowStart = time.Now()
		}
		tr.setBurst(b + 1)
		start := time.Now()
		total := 0
		for j := range half { // pair j: same size in both arms, alternating which goes first
			order := []*benchPool{pools[j], pools[half+j]}
			if (b+j)%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, p := range order {
				p.replicas += sizes[b][j]
				want[p.arm] += sizes[b][j]
				total += sizes[b][j]
				if err := w.SetReplicas(ctx, p.scenario.NodePool, p.replicas); err != nil {
					return err
				}
			}
		}
		logf("burst %d: %d AgentMachines (%d per arm), NodePools raised in %.1f s", b+1, total, total/2, time.Since(start).Seconds())
		if err := waitBound(ctx, tr, want[armWithout]+want[armWith], c.burstTimeout); err != nil {
			return fmt.Errorf("burst %d not fully bound: %w", b+1, err)
		}
		logf("burst %d: every AgentMachine bound %.0f s after the NodePools were raised", b+1, time.Since(start).Seconds())
		if err := waitNodes(ctx, tr, want[armWithout]+want[armWith], c.install+c.burstTimeout); err != nil {
			return fmt.Errorf("burst %d: not every Node joined: %w", b+1, err)
		}
		logf("burst %d: every Node joined Ready %.0f s after the NodePools were raised", b+1, time.Since(start).Seconds())
		logBurst(tr.snapshot(), b+1)
		logWorldPace(w, b+1)
	}
	// The cost window closes once the standby is full again: one whole cycle of taking and refilling.
	if err := waitStandby(ctx, tr, pools, c.standby, c.burstTimeout); err != nil {
		return fmt.Errorf("after the last burst: %w", err)
	}
	windowEnd := time.Now()
	stopSampler()
	<-samplerDone

	figs, figErr := figures(tr.snapshot())
	readyH := vmHoursPerDay(sampler.samples(armWith, false), windowStart, windowEnd)
	unusedWith := vmHoursPerDay(sampler.samples(armWith, true), windowStart, windowEnd)
	unusedWithout := vmHoursPerDay(sampler.samples(armWithout, true), windowStart, windowEnd)
	// The standby's cost is every VM of the standby pools that serves no Machine: the ready standby and
	// the refills booting. Without standby such VMs are the ones booting for waiting demand, i.e. the
	// latency itself, not an extra.
	cost := unusedWith
	logf("over %.0f s (first burst until the standby refilled after the last): VMs serving no Machine %.1f VM-hours/day with standby"+
		" (of them ready: %.1f), %.1f without; idle steady state with standby: %d pools x %d x 24 h = %d",
		windowEnd.Sub(windowStart).Seconds(), unusedWith, readyH, unusedWithout, half, c.standby, half*c.standby*24)
	for _, a := range []arm{armWithout, armWith} {
		f := figs[a]
		logf("%s: %d AgentMachines, %d waited with NoSuitableAgents, %d were bound on the provider's first look",
			a, len(f.samples), f.waited, len(f.samples)-f.waited)
	}
	logHistogram(tr.snapshot(), armOf)
	fmt.Println(constantsLine(c))
	w1, w0 := figs[armWith], figs[armWithout]
	fmt.Printf("latency: %d pools, reserved p50 %s p99 %s, node-ready p50 %s p99 %s with standby %d vs reserved p50 %s p99 %s, node-ready p50 %s p99 %s without;"+
		" standby saves %s of reserved (%.1fx) and %s of node-ready (%.1fx) at p50, standby cost %.0f VM-hours/day (%d bursts of 1-%d per pool, world loops every %s)\n",
		c.pools, seconds(w1.p50), seconds(w1.p99), seconds(w1.nodeP50), seconds(w1.nodeP99), c.standby,
		seconds(w0.p50), seconds(w0.p99), seconds(w0.nodeP50), seconds(w0.nodeP99),
		seconds(w0.p50-w1.p50), w0.p50/w1.p50, seconds(w0.nodeP50-w1.nodeP50), w0.nodeP50/w1.nodeP50,
		cost, c.bursts, c.burstMax, c.worldInterval)
	if figErr != nil {
		return figErr
	}
	return verdict(figs, want, c.minRatio)
}

// waitStandby waits until every standby pool has at least n free Agents (as the provider would see them).
func waitStandby(ctx context.Context, tr *tracker, pools []*benchPool, n int, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, string, error) {
		free, err := tr.census(ctx)
		if err != nil {
			return false, "", err
		}
		full, all := 0, 0
		for _, p := range pools {
			if p.arm != armWith {
				continue
			}
			all++
			if free[p.scenario.Namespace].free >= n {
				full++
			}
		}
		return full == all, fmt.Sprintf("%d/%d standby pools full", full, all), nil
	})
}

// waitBound waits until want AgentMachines are seen and bound.
func waitBound(ctx context.Context, tr *tracker, want int, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, string, error) {
		seen, bound, _ := tr.counts()
		return seen == want && bound == want, fmt.Sprintf("%d/%d AgentMachines seen, %d bound", seen, want, bound), nil
	})
}

// waitNodes waits until the Machines of want AgentMachines have their Node.
func waitNodes(ctx context.Context, tr *tracker, want int, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, string, error) {
		_, _, nodes := tr.counts()
		return nodes == want, fmt.Sprintf("%d/%d Nodes joined", nodes, want), nil
	})
}

// poll calls f every second (logging its progress every 15 s) until it reports done, errs or timeout passes.
func poll(ctx context.Context, timeout time.Duration, f func() (bool, string, error)) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		done, progress, err := f()
		if err != nil || done {
			return err
		}
		if time.Since(lastLog) > 15*time.Second {
			logf("  %s", progress)
			lastLog = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %s", timeout, progress)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ctx.Err(), progress)
		case <-time.After(time.Second):
		}
	}
}

// logBurst logs one burst's p50 and p99 per arm.
func logBurst(ms []machineTimes, burst int) {
	var in []machineTimes
	for _, m := range ms {
		if m.burst == burst {
			in = append(in, m)
		}
	}
	f, _ := figures(in)
	logf("burst %d: p50 %s p99 %s with standby (%d), p50 %s p99 %s without (%d)", burst,
		seconds(f[armWith].p50), seconds(f[armWith].p99), len(f[armWith].samples),
		seconds(f[armWithout].p50), seconds(f[armWithout].p99), len(f[armWithout].samples))
	for _, a := range []arm{armWith, armWithout} {
		var toOwned, toBound []float64
		for _, m := range in {
			if m.arm == a && !m.owned.IsZero() && !m.bound.IsZero() {
				toOwned = append(toOwned, max(m.owned.Sub(m.start()), 0).Seconds())
				toBound = append(toBound, m.bound.Sub(maxTime(m.owned, m.start())).Seconds())
			}
		}
		logf("burst %d: %s, medians: waiting -> owner Machine set (CAPI) %s, then -> bound %s", burst, a,
			seconds(percentile(toOwned, 50)), seconds(percentile(toBound, 50)))
	}
}

// standbySampler takes each arm's census every interval.
type standbySampler struct {
	tr    *tracker
	every time.Duration

	mu           sync.Mutex
	free, unused map[arm][]countSample
}

func (s *standbySampler) start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	s.free, s.unused = map[arm][]countSample{}, map[arm][]countSample{}
	go func() {
		defer close(done)
		for {
			if byNS, err := s.tr.census(ctx); err == nil {
				now := time.Now()
				free, unused := map[arm]int{}, map[arm]int{}
				for ns, c := range byNS {
					free[s.tr.armOf[ns]] += c.free
					unused[s.tr.armOf[ns]] += c.unused
				}
				s.mu.Lock()
				for _, a := range []arm{armWithout, armWith} {
					s.free[a] = append(s.free[a], countSample{at: now, n: free[a]})
					s.unused[a] = append(s.unused[a], countSample{at: now, n: unused[a]})
				}
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.every):
			}
		}
	}()
	return done
}

// samples returns an arm's free (ready standby) or unused (every VM serving no Machine) counts.
func (s *standbySampler) samples(a arm, unused bool) []countSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	if unused {
		return append([]countSample(nil), s.unused[a]...)
	}
	return append([]countSample(nil), s.free[a]...)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// logWorldPace logs how long the world's provider (binding) and assisted-service binding loops take a
// run: the world works every AgentMachine each run where the real provider reconciles one on its watch
// event, so a slow run here adds to the standby's bind time what the real provider does not pay.
func logWorldPace(w *world.Driver, burst int) {
	t := w.Timing()
	for _, name := range []string{"binding", "agent-binding"} {
		if l, ok := t.Loops[name]; ok {
			logf("burst %d: world loop %s: %d runs, last %.1f s, longest %.1f s, %d failed", burst, name, l.Runs,
				l.LastRun.Seconds(), l.LongestRun.Seconds(), l.Errors)
		}
	}
}

// constantsLine names the world's delays the figures rest on, each with where it comes from
// (docs/standby.md, "World delays").
func constantsLine(c config) string {
	return fmt.Sprintf("constants: discovery boot %s (power-on to registration: the live ISO boots and its agent registers; "+
		"no duration is published in what we read; our own AwaitingRegistration guidance calls a few minutes normal, so this is the low end), validation %s "+
		"(assisted-service's host monitor re-evaluates every 8 s, HOST_MONITOR_INTERVAL, and needs the agent's inventory, "+
		"connectivity and NTP results: a few rounds), installation %s (bound to Node Ready: image written, reboot, join; "+
		"no duration is published in what we read: our assumption, -install-delay)", c.registration, c.validation, c.install)
}
