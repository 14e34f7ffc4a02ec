package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/test/sim/apifaults"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// Environment knobs. CHAOS_RUNS (default 20: the short campaign inside `make test`; `make test-chaos`
// sets 200), CHAOS_SEED (default: the clock, printed), CHAOS_ONLY=<run> replays one run of a seed,
// CHAOS_MODE (inprocess, the default: the controllers in this process, a kill is a cooperative stop;
// sigkill: the real manager binary, a kill is SIGKILL by PID), CHAOS_MIN_KILLS (executed kills every
// crash point needs; default 3 when the campaign has 3 runs per point, else 1), CHAOS_MIN_API_FAULTS
// (executed API faults the campaign needs: "N" per fault kind, or "total=N" and/or "<kind>=N" separated by
// commas; default 1 per kind with the fault proxy on, none without it).
const (
	defaultRuns = 20
	// runTimeout bounds one run (every await inside it has its own, shorter deadline).
	runTimeout = 3 * time.Minute
)

// plan is what one run does: a scenario and the crash points it dies at (one, sometimes two).
type plan struct {
	Index    int
	Scenario string
	Kills    []kill
}

func (p plan) String() string {
	var ks []string
	for _, k := range p.Kills {
		ks = append(ks, fmt.Sprintf("%s#%d", k.Point, k.Nth))
	}
	return fmt.Sprintf("run %d: %s, kill at %s", p.Index, p.Scenario, strings.Join(ks, " then "))
}

// makePlans draws the campaign from the seed: crash points in shuffled rounds (so every point is
// targeted about runs/len(crashpoint.Campaign) times), each with a scenario that reaches it; a quarter of
// the runs kill twice.
func makePlans(seed uint64, runs int) []plan {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var order []string
	plans := make([]plan, 0, runs)
	for i := 0; i < runs; i++ {
		if len(order) == 0 {
			order = slices.Clone(crashpoint.Campaign)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		point := order[0]
		order = order[1:]
		var fits []*scenario
		for _, s := range scenarios {
			if slices.Contains(s.points, point) {
				fits = append(fits, s)
			}
		}
		s := fits[rng.IntN(len(fits))]
		p := plan{Index: i, Scenario: s.name, Kills: []kill{{point, nth(rng, point)}}}
		if rng.IntN(4) == 0 {
			second := s.points[rng.IntN(len(s.points))]
			p.Kills = append(p.Kills, kill{second, nth(rng, second)})
		}
		plans = append(plans, p)
	}
	return plans
}

// nth picks which hit of the point kills: the pool's status is written often (any of its first three
// writes: batched status writes make a run write it only about five times, and a kill planned past the
// last write never fires); the ISO is cached and a VM destroyed once per run (the first); the per-VM points of the
// two-VM scenarios die at the first or the second VM.
func nth(rng *rand.Rand, point string) int {
	switch point {
	case crashpoint.PoolStatusWritten:
		return 1 + rng.IntN(3)
	case crashpoint.ISOTempUploaded, crashpoint.ISOMoved, crashpoint.VMDestroyed, crashpoint.AgentDeleted,
		crashpoint.LeaseReleased, crashpoint.LeaseConfigRemoved:
		return 1
	}
	return 1 + rng.IntN(2)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// defaultMinKills is CHAOS_MIN_KILLS's default: 3 executed kills per crash point once the campaign has
// runs enough for it (3 per point), else 1 (the short campaign of `go test ./...`).
func defaultMinKills(runs int) int {
	if runs >= 3*len(crashpoint.Campaign) {
		return 3
	}
	return 1
}

func TestChaosCampaign(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	runs := envInt("CHAOS_RUNS", defaultRuns)
	seed := uint64(time.Now().UnixNano() % 1_000_000_000)
	if v, err := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64); err == nil {
		seed = v
	}
	only := envInt("CHAOS_ONLY", -1)
	plans := makePlans(seed, max(runs, only+1))
	if only >= 0 {
		plans = plans[only : only+1]
	}
	minKills := envInt("CHAOS_MIN_KILLS", defaultMinKills(len(plans)))
	minFaults, err := parseMinFaults(os.Getenv("CHAOS_MIN_API_FAULTS"), os.Getenv("CHAOS_API_FAULTS") == "1")
	if err != nil {
		t.Fatal(err)
	}
	if only >= 0 {
		minKills = 0 // one replayed run cannot cover every point
		minFaults = faultMinimum{}
	}
	mode := os.Getenv("CHAOS_MODE")
	if mode == "" {
		mode = "inprocess"
	}
	if mode != "inprocess" && mode != "sigkill" {
		t.Fatalf("CHAOS_MODE=%q: want inprocess or sigkill", mode)
	}
	t.Logf("chaos: seed %d, %d runs, mode %s, at least %d executed kill(s) per crash point, API faults %s (reproduce one run: CHAOS_MODE=%s CHAOS_SEED=%d CHAOS_ONLY=<run> go test ./test/chaos -run TestChaosCampaign -count=1 -v)",
		seed, len(plans), mode, minKills, minFaults, mode, seed)

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(plans)+2)*runTimeout)
	defer cancel()
	started := time.Now()
	// Two clusters: the failure-domain scenario places VMs in zone-a (DC0_C0) and zone-b (DC0_C1).
	h, err := harness.Start(ctx, harness.Options{ISOSize: 64 << 10, VCSim: vcsim.Options{Clusters: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("harness cleanup: %v", err)
		}
	})
	k := newHook()
	notes := make(chan string, 16)
	note := func(s string) { notes <- s }
	proxy, args, wrap := startFaultProxy(ctx, t, h, seed)
	var op operator
	if mode == "sigkill" {
		op = startProcessOperator(ctx, t, h, k, note, args)
	} else {
		ip := &inProcessOperator{h: h, wrap: wrap, opts: controllers.Options{Settings: controllers.Settings{DebounceIdle: 100 * time.Millisecond, DebounceMax: time.Second}, Hooks: controllers.Hooks{CrashPoint: k.seam}}}
		if err := ip.start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ip.stop() })
		go supervise(ctx, k, ip, note)
		op = ip
	}
	wc, err := client.NewWithWatch(h.Env.Config, client.Options{Scheme: h.Env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := &campaign{t: t, h: h, hook: k, op: op, seed: seed, watch: wc, moments: &moments{}, proxy: proxy}
	h.VC.OnVMCall(c.moments.onVMCall)
	if err := c.recordForeign(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("harness and operator up in %.1fs (simulator in its own process: %t, operator: %s)", time.Since(started).Seconds(), h.VC.Model == nil, mode)

	violations, planned, executedInRuns, destroys, creates := 0, 0, 0, 0, 0
	copiesChecked, limitSamples, limitRuns, limitPeak, standbyRuns := 0, 0, 0, 0, 0
	var unexplained, explained []string
	var durations []time.Duration
	for _, p := range plans {
		r := c.newRun(ctx, p, notes)
		r.execute()
		durations = append(durations, r.took)
		planned += len(p.Kills)
		executedInRuns += r.kills
		explained = append(explained, r.unfired...)
		if len(p.Kills)-r.kills != len(r.unfired) {
			unexplained = append(unexplained, fmt.Sprintf("%s: %d kill(s) planned, %d executed, %d reason(s) recorded: %v",
				p, len(p.Kills), r.kills, len(r.unfired), r.unfired))
		}
		if len(r.violations) > 0 {
			violations += len(r.violations)
			t.Errorf("chaos: %s: %d invariant violation(s); reproduce: CHAOS_MODE=%s CHAOS_SEED=%d CHAOS_ONLY=%d go test ./test/chaos -run TestChaosCampaign -count=1 -v\n%s",
				p, len(r.violations), mode, seed, p.Index, r.report())
		} else if testing.Verbose() {
			t.Logf("%s: ok in %.1fs (%d kills executed; %s)", p, r.took.Seconds(), r.kills, r.momentSummary)
		}
		destroys += r.destroysChecked
		creates += r.createsChecked
		copiesChecked += r.copiesChecked
		limitSamples += r.limitSamples
		limitPeak = max(limitPeak, r.limitPeak)
		if r.maxVMs > 0 {
			limitRuns++
		}
		if r.standby > 0 {
			standbyRuns++
		}
		if ctx.Err() != nil {
			t.Errorf("campaign deadline reached after run %d", p.Index)
			break
		}
	}
	reached, decided, executed := k.counts()
	totalExecuted, covered := 0, 0
	var under []string
	for _, p := range crashpoint.Campaign {
		totalExecuted += executed[p]
		if executed[p] >= minKills {
			covered++
		} else {
			under = append(under, fmt.Sprintf("%s (%d)", p, executed[p]))
		}
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	t.Logf("chaos: %s; per run median %.1fs, max %.1fs; operator restarts %d", time.Since(started).Round(time.Second),
		durations[len(durations)/2].Seconds(), durations[len(durations)-1].Seconds(), op.restarts())
	for _, p := range crashpoint.Campaign {
		t.Logf("  %-26s reached %5d  kills decided %3d  executed %3d", p, reached[p], decided[p], executed[p])
	}
	t.Logf("checked at the moment the simulator received them: %d VM destroys, %d VM creates", destroys, creates)
	t.Logf("kills: %d planned, %d executed (%d seen by the runs), %d not fired with a recorded reason", planned, totalExecuted, executedInRuns, len(explained))
	for _, e := range explained {
		t.Logf("  %s", e)
	}
	if len(under) > 0 {
		t.Errorf("crash points with fewer than %d executed kills (CHAOS_MIN_KILLS): %s", minKills, strings.Join(under, ", "))
	}
	if len(unexplained) > 0 {
		t.Errorf("planned and executed kills differ without a recorded reason:\n  %s", strings.Join(unexplained, "\n  "))
	}
	if totalExecuted != executedInRuns {
		t.Errorf("%d kills executed campaign-wide but %d reported to the runs", totalExecuted, executedInRuns)
	}
	faultCounts := map[string]int{}
	if c.proxy != nil {
		faultCounts = c.proxy.Counts()
	}
	if short := minFaults.shortfall(faultCounts); len(short) > 0 {
		t.Errorf("API faults below the minimum (CHAOS_MIN_API_FAULTS=%s): %s", minFaults, strings.Join(short, ", "))
	}
	line := fmt.Sprintf("chaos: %d runs, %d %s, %d/%d crash points hit >= %d times, %s (minimum %s), %d copies checked, %d limit samples in %d maxVMs runs (peak %d VMs), %d standby runs, %d invariant violations",
		len(plans), totalExecuted, op.mode(), covered, len(crashpoint.Campaign), minKills, c.apiFaults(), minFaults,
		copiesChecked, limitSamples, limitRuns, limitPeak, standbyRuns, violations)
	t.Log(line)
	fmt.Println(line)
}

// apiFaults counts the faults the API-server proxy injected, in total and by kind ("0 API faults" without
// the proxy).
func (c *campaign) apiFaults() string {
	if c.proxy == nil {
		return "0 API faults (proxy off)"
	}
	counts := c.proxy.Counts()
	parts := make([]string, 0, len(apifaults.Kinds))
	for _, k := range apifaults.Kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return fmt.Sprintf("%d API faults (%s)", c.proxy.Total(), strings.Join(parts, ", "))
}

// startFaultProxy starts the API-server fault proxy when CHAOS_API_FAULTS is 1 (`make test-chaos`; off in
// the short campaign of `go test`): the manager then reaches the API server only through it (the binary
// with a kubeconfig flag, the in-process manager through its rest.Config); the harness, the world, CAPI and
// the checks go direct, so they read the truth.
func startFaultProxy(ctx context.Context, t *testing.T, h *harness.Harness, seed uint64) (*apifaults.Proxy, []string, func(*rest.Config)) {
	t.Helper()
	if os.Getenv("CHAOS_API_FAULTS") != "1" {
		return nil, nil, nil
	}
	p, err := apifaults.Start(h.Env.Config, apifaults.Options{Seed: seed, LostResponse: 0.05, Burst: 0.01, WatchCut: 0.2, Slow: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	id, err := h.OperatorIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(h.TempDir(), "manager-via-proxy.kubeconfig")
	if err := p.WriteKubeconfig(kc, id.Config.BearerToken); err != nil {
		t.Fatal(err)
	}
	t.Logf("API-server fault proxy on %s (lost write responses 5%%, 429/503 bursts 1%%, watch cuts 20%%, slow 2%%)", p.URL)
	// The later --kubeconfig wins over the harness's.
	return p, []string{"--kubeconfig=" + kc}, func(c *rest.Config) { *c = *p.Config(c) }
}

// faultMinimum is CHAOS_MIN_API_FAULTS: executed API faults the campaign needs, per kind and in total.
type faultMinimum struct {
	perKind map[string]int
	total   int
}

func (m faultMinimum) String() string {
	var parts []string
	if m.total > 0 {
		parts = append(parts, fmt.Sprintf("total=%d", m.total))
	}
	for _, k := range apifaults.Kinds {
		if n := m.perKind[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// parseMinFaults reads CHAOS_MIN_API_FAULTS: "N" (every kind), or "total=N" and "<kind>=N" separated by
// commas; empty is 1 per kind when the proxy is on (proxyOn), else none.
func parseMinFaults(v string, proxyOn bool) (faultMinimum, error) {
	m := faultMinimum{perKind: map[string]int{}}
	v = strings.TrimSpace(v)
	if v == "" {
		if proxyOn {
			v = "1"
		} else {
			return m, nil
		}
	}
	if n, err := strconv.Atoi(v); err == nil {
		for _, k := range apifaults.Kinds {
			m.perKind[k] = n
		}
		return m, nil
	}
	for _, part := range strings.Split(v, ",") {
		k, nv, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(nv)
		if !ok || err != nil || n < 0 || (k != "total" && !slices.Contains(apifaults.Kinds, k)) {
			return m, fmt.Errorf("CHAOS_MIN_API_FAULTS=%q: want N, or total=N and <kind>=N separated by commas (kinds: %s)", v, strings.Join(apifaults.Kinds, ", "))
		}
		if k == "total" {
			m.total = n
		} else {
			m.perKind[k] = n
		}
	}
	return m, nil
}

// shortfall lists what the executed faults (counts, by kind) lack against the minimum.
func (m faultMinimum) shortfall(counts map[string]int) []string {
	var out []string
	total := 0
	for _, k := range apifaults.Kinds {
		total += counts[k]
		if want := m.perKind[k]; counts[k] < want {
			out = append(out, fmt.Sprintf("%s %d < %d", k, counts[k], want))
		}
	}
	if total < m.total {
		out = append(out, fmt.Sprintf("total %d < %d", total, m.total))
	}
	return out
}
