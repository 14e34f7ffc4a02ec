// Command memory measures the manager's memory at scale: the real manager binary (built from ./cmd,
// running with the shipped permissions, as test/sim/harness starts it) against a real API server
// (envtest), the vCenter simulator and the world driver, provisioning -pools × -per-pool VMs as
// bench-scale does. During the whole run it samples the manager process's RSS and peak RSS
// (/proc/<pid>/status VmRSS, VmHWM) and its Go heap (its own /metrics: go_memstats_heap_inuse_bytes,
// go_memstats_heap_alloc_bytes). With -foreign N it first creates N objects no pool uses (an even mix
// of Agents, Machines and AgentMachines shaped as the world writes its own, in namespaces foreign-NN),
// so the informers hold what a shared hub holds. -foreign takes a list: one run per count, each on a
// fresh API server, then the figures side by side. Each run ends with
//
//	memory: <pools> pools x <n> VMs, <foreign> foreign objects: manager peak RSS <x> MiB, peak heap in use <y> MiB
//
// and, with more than one count, the ratio of each to the first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

type config struct {
	pools, perPool, workers int
	idle, timeout           time.Duration
}

// result is one run's figures.
type result struct {
	foreign   int
	vms       int
	peak      memSample
	ready     memSample // after every pool cached its ISO, before the demand
	satisfied time.Duration
}

func main() { os.Exit(benchMemory()) }

func benchMemory() int {
	var c config
	flag.IntVar(&c.pools, "pools", 50, "number of pools (one HostedCluster namespace pair each)")
	flag.IntVar(&c.perPool, "per-pool", 20, "waiting AgentMachines per pool")
	foreign := flag.String("foreign", "0,10000", "foreign objects to create before the demand; a comma-separated list runs once per count")
	flag.IntVar(&c.workers, "create-workers", 8, "parallel creates of the foreign objects")
	flag.DurationVar(&c.idle, "idle", 15*time.Second, "sampling continues this long after the demand is satisfied")
	flag.DurationVar(&c.timeout, "timeout", 40*time.Minute, "bound of each run")
	prebuilt := flag.String("manager", "", "run this manager binary instead of building ./cmd (e.g. one built before a change, to compare)")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // the world's and the caches' logs; the manager logs to its own file
	var counts []int
	for _, f := range strings.Split(*foreign, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "bench-memory: -foreign %q: want non-negative counts\n", *foreign)
			return 2
		}
		counts = append(counts, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "bench-memory-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-memory:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := *prebuilt
	if bin == "" {
		logf("building the manager binary (go build ./cmd)")
		bin, err = harness.BuildManager(ctx, filepath.Join(dir, "manager"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-memory:", err)
		return 1
	}
	var results []result
	for _, n := range counts {
		runCtx, cancel := context.WithTimeout(ctx, c.timeout)
		r, err := run(runCtx, c, bin, n)
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench-memory: %d foreign objects: %v\n", n, err)
			return 1
		}
		results = append(results, r)
	}
	for _, r := range results {
		fmt.Printf("memory: %d pools x %d VMs, %d foreign objects: manager peak RSS %.0f MiB, peak heap in use %.0f MiB"+
			" (anonymous RSS %.0f MiB, heap alloc %.0f MiB; before the demand RSS %.0f MiB, heap in use %.0f MiB; demand satisfied in %.0f s)\n",
			c.pools, c.perPool, r.foreign, mib(r.peak.hwm), mib(r.peak.heapInuse), mib(r.peak.anon), mib(r.peak.heapAlloc),
			mib(r.ready.rss), mib(r.ready.heapInuse), r.satisfied.Seconds())
	}
	for _, r := range results[1:] {
		b := results[0]
		fmt.Printf("memory: %d foreign objects vs %d: peak RSS x%.2f (+%.0f MiB), peak heap in use x%.2f (+%.0f MiB)\n",
			r.foreign, b.foreign, float64(r.peak.hwm)/float64(max(b.peak.hwm, 1)), mib(r.peak.hwm)-mib(b.peak.hwm),
			float64(r.peak.heapInuse)/float64(max(b.peak.heapInuse, 1)), mib(r.peak.heapInuse)-mib(b.peak.heapInuse))
	}
	return 0
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// run is one measurement on a fresh harness: world, foreign objects, manager, pools, demand.
func run(ctx context.Context, c config, bin string, foreign int) (result, error) {
	res := result{foreign: foreign}
	h, samplePool, err := harness.StartBench(ctx, func(m string) { logf("%s", m) })
	if err != nil {
		return res, err
	}
	defer func() {
		logf("stopping everything")
		if err := h.Close(); err != nil {
			logf("cleanup: %v", err)
		}
	}()
	var scenarios []*world.Scenario
	var namespaces []string
	for i := range c.pools {
		ns := fmt.Sprintf("bench-%02d", i)
		s, err := h.Scenario(ctx, world.SetupOptions{Namespace: ns, HostedCluster: "hc", NodePool: "np", InfraEnv: "ie",
			AgentLabels: map[string]string{harness.BenchPoolLabel: ns}})
		if err != nil {
			return res, err
		}
		scenarios = append(scenarios, s)
		namespaces = append(namespaces, s.Namespaces()...)
	}
	if foreign > 0 {
		logf("creating %d foreign objects (Agents, Machines, AgentMachines in namespaces no pool uses)", foreign)
		if err := createForeign(ctx, h.Client, foreign, c.workers); err != nil {
			return res, err
		}
	}
	// The world as bench-scale runs it: its loops read from an informer cache of this process.
	worldCache, err := cache.New(h.Env.Config, cache.Options{Scheme: h.Env.Scheme})
	if err != nil {
		return res, err
	}
	cacheCtx, stopCache := context.WithCancel(ctx)
	defer stopCache()
	go func() { _ = worldCache.Start(cacheCtx) }()
	if !worldCache.WaitForCacheSync(ctx) {
		return res, fmt.Errorf("the world's cache did not sync")
	}
	w, err := h.StartWorld(world.Options{Namespaces: namespaces, InstallDelay: time.Second, Loops: true, Reader: worldCache,
		Workers: 10, ProviderWorkers: 10, InfraEnvFor: harness.BenchInfraEnv}, 500*time.Millisecond)
	if err != nil {
		return res, err
	}
	m, err := h.StartManagerProcess(ctx, harness.ProcessOptions{Binary: bin, LogPath: filepath.Join(h.TempDir(), "manager.log")})
	if err != nil {
		return res, err
	}
	logf("manager pid %d ready; sampling its RSS and heap every second", m.PID)
	p := &peaks{}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); sampleProcess(sampleCtx, m.PID, m.MetricsURL, time.Second, p) }()
	defer func() { stopSampling(); <-sampled }()

	for _, s := range scenarios {
		if err := h.Client.Create(ctx, harness.BenchPool(samplePool, s)); err != nil {
			return res, fmt.Errorf("creating pool %s: %w", s.Namespace, err)
		}
	}
	if err := waitPools(ctx, h, 10*time.Minute, "pools have their ISO cached", c.pools, func(p *afv1.VsphereAgentPool) int {
		if p.Status.ISO != nil && p.Status.ISO.Path != "" {
			return 1
		}
		return 0
	}); err != nil {
		return res, err
	}
	res.ready, _ = readSample(ctx, nil, m.PID, m.MetricsURL)
	logf("before the demand: RSS %.0f MiB, heap in use %.0f MiB", mib(res.ready.rss), mib(res.ready.heapInuse))
	start := time.Now()
	for _, s := range scenarios {
		if err := w.SetReplicas(ctx, s.NodePool, c.perPool); err != nil {
			return res, err
		}
	}
	res.vms = c.pools * c.perPool
	if err := waitPools(ctx, h, c.timeout, "Agents bound", res.vms, func(p *afv1.VsphereAgentPool) int { return int(p.Status.BoundAgents) }); err != nil {
		return res, err
	}
	res.satisfied = time.Since(start)
	logf("demand satisfied in %.0f s; sampling %s more", res.satisfied.Seconds(), c.idle)
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(c.idle):
	}
	if done, err := m.Exited(); done {
		return res, fmt.Errorf("the manager exited (%w); last log lines:\n%s", err, m.LogTail(20))
	}
	last, err := readSample(ctx, nil, m.PID, m.MetricsURL)
	if err != nil {
		return res, err
	}
	p.add(last) // VmHWM is the kernel's own peak: exact whatever the sampling missed
	res.peak = p.get()
	return res, nil
}

// waitPools polls the pools until the sum of count over them reaches want.
func waitPools(ctx context.Context, h *harness.Harness, timeout time.Duration, what string, want int, count func(*afv1.VsphereAgentPool) int) error {
	deadline := time.Now().Add(timeout)
	var lastLog time.Time
	for {
		var list afv1.VsphereAgentPoolList
		if err := h.Client.List(ctx, &list); err != nil {
			return err
		}
		n := 0
		for i := range list.Items {
			n += count(&list.Items[i])
		}
		if n >= want || time.Since(lastLog) > 15*time.Second {
			logf("%d/%d %s", n, want, what)
			lastLog = time.Now()
		}
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s: %d/%d %s", timeout, n, want, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}
