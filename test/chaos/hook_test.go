package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// kill is one planned crash: the nth time a run's objects reach point, the operator dies there.
type kill struct {
	Point string
	Nth   int
}

// hook is the operator's crash-point seam (controllers.Options.CrashPoint) for the whole campaign: it
// counts every point reached and, while armed, kills the operator at the current run's next planned
// kill by blocking the pass until the manager is stopped.
type hook struct {
	mu      sync.Mutex
	ns      string // the running run's hub namespace; other namespaces never trigger a kill
	plan    []kill
	armed   bool
	seen    int
	reached map[string]int // every hit, campaign-wide
	killed  map[string]int // kills, campaign-wide
	fired   chan string
}

func newHook() *hook {
	return &hook{reached: map[string]int{}, killed: map[string]int{}, fired: make(chan string, 1)}
}

func (k *hook) seam(ctx context.Context, point string, key types.NamespacedName) {
	k.mu.Lock()
	k.reached[point]++
	fire := false
	if k.armed && key.Namespace == k.ns && len(k.plan) > 0 && k.plan[0].Point == point {
		k.seen++
		if k.seen >= k.plan[0].Nth {
			fire, k.armed, k.seen = true, false, 0
			k.plan = k.plan[1:]
			k.killed[point]++
		}
	}
	k.mu.Unlock()
	if !fire {
		return
	}
	select {
	case k.fired <- point + " (" + key.String() + ")":
	default:
	}
	<-ctx.Done() // the operator dies here: this pass writes nothing more
}

// arm sets the run's namespace and kill plan (nil plan: only count).
func (k *hook) arm(ns string, plan []kill) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ns, k.plan, k.seen, k.armed = ns, append([]kill(nil), plan...), 0, len(plan) > 0
}

// rearm arms the next planned kill after a restart; it reports whether one is left.
func (k *hook) rearm() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.armed = len(k.plan) > 0
	return k.armed
}

func (k *hook) disarm() { k.arm("", nil) }

func (k *hook) counts() (reached, killed map[string]int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	reached, killed = map[string]int{}, map[string]int{}
	for p, n := range k.reached {
		reached[p] = n
	}
	for p, n := range k.killed {
		killed[p] = n
	}
	return reached, killed
}

// operator is the in-process manager, restarted fresh after every kill.
type operator struct {
	h    *harness.Harness
	opts controllers.Options
	mu   sync.Mutex
	mgr  *harness.InProcessManager
	// restarts counts kills handled; log receives one line per kill.
	restarts int
}

func (o *operator) start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, err := o.h.StartManagerInProcess(harness.InProcessOptions{Controllers: o.opts, StopTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	o.mgr = m
	return nil
}

func (o *operator) stop() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mgr == nil {
		return nil
	}
	err := o.mgr.Stop()
	o.mgr = nil
	return err
}

// restart stops the manager (its blocked pass ends with its context) and starts a fresh one.
func (o *operator) restart() (time.Duration, error) {
	start := time.Now()
	if err := o.stop(); err != nil {
		return 0, fmt.Errorf("stopping the killed manager: %w", err)
	}
	o.restarts++
	return time.Since(start), o.start()
}

// supervise restarts the operator whenever the hook kills it, until ctx ends; note receives one line
// per kill for the running run's event log.
func supervise(ctx context.Context, k *hook, o *operator, note func(string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case where := <-k.fired:
			d, err := o.restart()
			if err != nil {
				note(fmt.Sprintf("killed at %s; restart FAILED: %v", where, err))
				continue
			}
			more := k.rearm()
			note(fmt.Sprintf("killed at %s; fresh manager started (stop took %s; another kill planned: %t)", where, d.Round(time.Millisecond), more))
		}
	}
}
