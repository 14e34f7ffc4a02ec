package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// Environment knobs. CHAOS_RUNS (default 20: the short campaign inside `make test`; `make test-chaos`
// sets 200), CHAOS_SEED (default: the clock, printed), CHAOS_ONLY=<run> replays one run of a seed.
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
// targeted about runs/14 times), each with a scenario that reaches it; a quarter of the runs kill twice.
func makePlans(seed uint64, runs int) []plan {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var order []string
	plans := make([]plan, 0, runs)
	for i := 0; i < runs; i++ {
		if len(order) == 0 {
			order = slices.Clone(crashpoint.All)
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

// nth picks which hit of the point kills: the pool's status is written often (any of its first six
// writes); the ISO is cached and a VM destroyed once per run (the first); the per-VM points of the
// two-VM scenarios die at the first or the second VM.
func nth(rng *rand.Rand, point string) int {
	switch point {
	case crashpoint.PoolStatusWritten:
		return 1 + rng.IntN(6)
	case crashpoint.ISOTempUploaded, crashpoint.ISOMoved, crashpoint.VMDestroyed, crashpoint.AgentDeleted:
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
	t.Logf("chaos: seed %d, %d runs (reproduce one run: CHAOS_SEED=%d CHAOS_ONLY=<run> go test ./test/chaos -run TestChaosCampaign -count=1 -v)", seed, len(plans), seed)

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(plans)+2)*runTimeout)
	defer cancel()
	started := time.Now()
	h, err := harness.Start(ctx, harness.Options{ISOSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("harness cleanup: %v", err)
		}
	})
	opts := controllers.Options{DebounceIdle: 100 * time.Millisecond, DebounceMax: time.Second}
	if h.VC.Model != nil {
		// In-process simulator: govmomi's simulator races with itself under -race with parallel VM
		// tasks; one VM worker keeps the operator's logic unchanged.
		opts.VMWorkers = 1
	}
	k := newHook()
	opts.CrashPoint = k.seam
	op := &operator{h: h, opts: opts}
	if err := op.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.stop() })
	c := &campaign{t: t, h: h, hook: k, op: op, seed: seed}
	if err := c.recordForeign(ctx); err != nil {
		t.Fatal(err)
	}
	notes := make(chan string, 16)
	go supervise(ctx, k, op, func(s string) { notes <- s })
	workers := "production default"
	if opts.VMWorkers > 0 {
		workers = strconv.Itoa(opts.VMWorkers)
	}
	t.Logf("harness up in %.1fs (simulator in its own process: %t, VM workers: %s)", time.Since(started).Seconds(), h.VC.Model == nil, workers)

	violations := 0
	var durations []time.Duration
	for _, p := range plans {
		r := c.newRun(ctx, p, notes)
		r.execute()
		durations = append(durations, r.took)
		if len(r.violations) > 0 {
			violations += len(r.violations)
			t.Errorf("chaos: %s: %d invariant violation(s); reproduce: CHAOS_SEED=%d CHAOS_ONLY=%d go test ./test/chaos -run TestChaosCampaign -count=1 -v\n%s",
				p, len(r.violations), seed, p.Index, r.report())
		} else if testing.Verbose() {
			t.Logf("%s: ok in %.1fs (%d kills)", p, r.took.Seconds(), r.kills)
		}
		if ctx.Err() != nil {
			t.Errorf("campaign deadline reached after run %d", p.Index)
			break
		}
	}
	reached, killed := k.counts()
	var missing []string
	for _, p := range crashpoint.All {
		if killed[p] == 0 {
			missing = append(missing, p)
		}
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	t.Logf("chaos: %s in %.0fs; per run median %.1fs, max %.1fs; restarts %d", time.Since(started).Round(time.Second), time.Since(started).Seconds(),
		durations[len(durations)/2].Seconds(), durations[len(durations)-1].Seconds(), op.restarts)
	for _, p := range crashpoint.All {
		t.Logf("  %-26s reached %5d  killed %3d", p, reached[p], killed[p])
	}
	if len(missing) > 0 && len(plans) >= len(crashpoint.All) {
		t.Logf("crash points never killed at: %s", strings.Join(missing, ", "))
	}
	line := fmt.Sprintf("chaos: %d runs, %d/%d crash points hit, %d invariant violations", len(plans), len(crashpoint.All)-len(missing), len(crashpoint.All), violations)
	t.Log(line)
	fmt.Println(line)
}
