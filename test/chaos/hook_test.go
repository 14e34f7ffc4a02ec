package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// kill is one planned crash: the nth time a run's objects reach point, the operator dies there.
type kill struct {
	Point string
	Nth   int
}

// hook decides, at every crash point the operator announces (in process through
// controllers.Options.CrashPoint, or the real binary over its crash-point socket), whether the operator
// dies there: while armed, at the current run's next planned kill. It counts every point reached, every
// kill decided and every kill executed (the manager actually gone: its process reaped after SIGKILL, or
// the in-process manager stopped), so the campaign reports what happened, not what it planned.
type hook struct {
	mu         sync.Mutex
	ns         string // the running run's hub namespace; other namespaces never trigger a kill
	plan       []kill
	armed      bool
	seen       int
	runReached map[string]int // hits in the running run's namespace
	reached    map[string]int // every hit, campaign-wide
	decided    map[string]int // kills decided (the point blocked for the kill)
	executed   map[string]int // kills carried out
	pending    int            // decided, neither executed nor failed yet
	failures   []string       // decided kills that could not be carried out, with why
	fired      chan string    // in-process mode: the supervisor's work
}

func newHook() *hook {
	return &hook{reached: map[string]int{}, decided: map[string]int{}, executed: map[string]int{}, runReached: map[string]int{},
		fired: make(chan string, 1)}
}

// decide counts the hit and reports whether the operator dies here.
func (k *hook) decide(point string, key types.NamespacedName) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.reached[point]++
	if key.Namespace == k.ns && k.ns != "" {
		k.runReached[point]++
	}
	if !k.armed || key.Namespace != k.ns || len(k.plan) == 0 || k.plan[0].Point != point {
		return false
	}
	k.seen++
	if k.seen < k.plan[0].Nth {
		return false
	}
	k.armed, k.seen = false, 0
	k.plan = k.plan[1:]
	k.decided[point]++
	k.pending++
	return true
}

// done records the outcome of a decided kill: executed (err nil) or failed with its reason.
func (k *hook) done(point string, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pending--
	if err != nil {
		k.failures = append(k.failures, fmt.Sprintf("kill at %s not carried out: %v", point, err))
		return
	}
	k.executed[point]++
}

// seam is the in-process operator's controllers.Options.CrashPoint: a kill blocks the pass until the
// supervisor stops the manager (a cooperative kill: every context ends, nothing is written after it).
func (k *hook) seam(ctx context.Context, point string, key types.NamespacedName) {
	if !k.decide(point, key) {
		return
	}
	select {
	case k.fired <- point + " (" + key.String() + ")":
	default:
	}
	<-ctx.Done()
}

// arm sets the run's namespace and kill plan (nil plan: only count) and resets the run's hit counts.
func (k *hook) arm(ns string, plan []kill) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ns, k.plan, k.seen, k.armed = ns, append([]kill(nil), plan...), 0, len(plan) > 0
	k.runReached = map[string]int{}
}

// rearm arms the next planned kill after a restart; it reports whether one is left.
func (k *hook) rearm() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.armed = len(k.plan) > 0
	return k.armed
}

// settle waits (bounded) until no decided kill is still being carried out, then disarms and returns
// the run's planned kills never decided, each with the reason read from the run's hit counts.
func (k *hook) settle(timeout time.Duration) (unfired []string, inFlight int) {
	deadline := time.Now().Add(timeout)
	for {
		k.mu.Lock()
		p := k.pending
		k.mu.Unlock()
		if p == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, kl := range k.plan {
		armedHits := 0
		if i == 0 && k.armed {
			armedHits = k.seen
		}
		why := fmt.Sprintf("the run reached %s %d time(s) in its namespace, %d of them while this kill was armed", kl.Point, k.runReached[kl.Point], armedHits)
		if i > 0 || !k.armed {
			why += " (it is armed only after the run's earlier kill and its restart)"
		}
		unfired = append(unfired, fmt.Sprintf("kill at %s#%d not fired: %s", kl.Point, kl.Nth, why))
	}
	inFlight = k.pending
	k.ns, k.plan, k.seen, k.armed = "", nil, 0, false
	return unfired, inFlight
}

// takeFailures returns and forgets the failures recorded since the last call.
func (k *hook) takeFailures() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := k.failures
	k.failures = nil
	return f
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for p, n := range m {
		out[p] = n
	}
	return out
}

func (k *hook) counts() (reached, decided, executed map[string]int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return copyCounts(k.reached), copyCounts(k.decided), copyCounts(k.executed)
}

// operator is the manager under test, restarted fresh after every kill.
type operator interface {
	// mode names how a kill happens, for the campaign's line.
	mode() string
	start(ctx context.Context) error
	stop() error
	restarts() int
	// readySince is when the running manager became ready (zero before the first start): a step's
	// bound counts from the later of the step's start and the last restart, since a restart's own
	// duration (process start, cache sync, leader election) is not demand the operator left waiting.
	readySince() time.Time
}

// inProcessOperator is the in-process manager; a kill is the seam blocking plus a stop of the manager.
type inProcessOperator struct {
	h    *harness.Harness
	opts controllers.Options
	wrap func(*rest.Config) // the fault proxy's redirect (nil: direct)
	mu   sync.Mutex
	mgr  *harness.InProcessManager
	n    int
	// ready is when the running manager was started.
	ready time.Time
}

func (o *inProcessOperator) mode() string { return "in-process kills (context cancel, not SIGKILL)" }

func (o *inProcessOperator) restarts() int { o.mu.Lock(); defer o.mu.Unlock(); return o.n }

func (o *inProcessOperator) readySince() time.Time { o.mu.Lock(); defer o.mu.Unlock(); return o.ready }

func (o *inProcessOperator) start(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, err := o.h.StartManagerInProcess(harness.InProcessOptions{Controllers: o.opts, StopTimeout: 30 * time.Second, WrapConfig: o.wrap})
	if err != nil {
		return err
	}
	o.mgr = m
	o.ready = time.Now()
	return nil
}

func (o *inProcessOperator) stop() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mgr == nil {
		return nil
	}
	err := o.mgr.Stop()
	o.mgr = nil
	return err
}

// supervise carries out the in-process kills: stop the manager (its blocked pass ends with its
// context), count the kill executed, start a fresh manager; note receives one line per kill.
func supervise(ctx context.Context, k *hook, o *inProcessOperator, note func(string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case where := <-k.fired:
			point, _, _ := cutPoint(where)
			start := time.Now()
			err := o.stop()
			k.done(point, err)
			if err != nil {
				note(fmt.Sprintf("kill at %s FAILED: stopping the manager: %v", where, err))
			}
			o.mu.Lock()
			o.n++
			o.mu.Unlock()
			if err := o.start(ctx); err != nil {
				note(fmt.Sprintf("killed at %s; restart FAILED: %v", where, err))
				continue
			}
			more := k.rearm()
			note(fmt.Sprintf("killed at %s; fresh manager started (stop took %s; another kill planned: %t)", where, time.Since(start).Round(time.Millisecond), more))
		}
	}
}

// cutPoint splits "point (ns/name)".
func cutPoint(where string) (point, key string, ok bool) {
	for i := 0; i < len(where); i++ {
		if where[i] == ' ' {
			return where[:i], where[i+1:], true
		}
	}
	return where, "", false
}
