// Package liveness is the manager's reconcile watchdog: every pass of the pool and VsphereAgent
// controllers registers its start and end with a Tracker, and the Tracker's Check (the healthz check
// "reconcilers") fails while a pass runs far past its own deadline. A pass's work is bounded by a
// deadline (Options.PoolPassTimeout, VMPassTimeout); one still running at twice that deadline is stuck
// on something no deadline reaches (a hung status write, a deadlock), and only a restart frees its worker.
package liveness

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultGraceFactor is how many times its deadline a pass may run before it counts as stuck.
const DefaultGraceFactor = 2

// Tracker remembers the passes running now. The zero value is not usable; use NewTracker. A nil
// *Tracker tracks nothing and always passes (controllers built without a manager, unit tests).
type Tracker struct {
	clock clock.PassiveClock
	// graceFactor times a pass's deadline is how long it may run before Check fails.
	graceFactor int

	mu      sync.Mutex
	next    uint64
	running map[uint64]pass
}

// pass is one running reconcile: which controller, which object (namespace/name only), since when.
type pass struct {
	controller string
	object     types.NamespacedName
	started    time.Time
	deadline   time.Duration
}

// NewTracker returns a Tracker on clk (the real clock when nil) that fails its check once a pass has
// run graceFactor times its deadline (DefaultGraceFactor when below 1).
func NewTracker(clk clock.PassiveClock, graceFactor int) *Tracker {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if graceFactor < 1 {
		graceFactor = DefaultGraceFactor
	}
	return &Tracker{clock: clk, graceFactor: graceFactor, running: map[uint64]pass{}}
}

// Start records that controller began a pass on object whose work is bounded by deadline; the
// returned func records its end (defer it, so a panic ends the pass too). A deadline <= 0 is never
// reported stuck.
func (t *Tracker) Start(controller string, object types.NamespacedName, deadline time.Duration) (done func()) {
	if t == nil {
		return func() {}
	}
	t.mu.Lock()
	t.next++
	id := t.next
	t.running[id] = pass{controller: controller, object: object, started: t.clock.Now(), deadline: deadline}
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.running, id)
		t.mu.Unlock()
	}
}

// Running is the number of passes running now.
func (t *Tracker) Running() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.running)
}

// Check is a healthz.Checker: it fails, naming each stuck pass's controller, object and age, while
// any pass has run longer than graceFactor times its deadline.
func (t *Tracker) Check(_ *http.Request) error {
	if t == nil {
		return nil
	}
	now := t.clock.Now()
	var stuck []string
	t.mu.Lock()
	for _, p := range t.running {
		if p.deadline <= 0 {
			continue
		}
		limit := time.Duration(t.graceFactor) * p.deadline
		if age := now.Sub(p.started); age > limit {
			stuck = append(stuck, fmt.Sprintf("%s %s running for %s (deadline %s, limit %s)",
				p.controller, p.object, age.Round(time.Second), p.deadline, limit))
		}
	}
	t.mu.Unlock()
	if len(stuck) == 0 {
		return nil
	}
	sort.Strings(stuck)
	return fmt.Errorf("%d reconcile(s) stuck beyond their deadline: %s", len(stuck), strings.Join(stuck, "; "))
}
