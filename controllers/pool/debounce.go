package pool

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// debouncer remembers bursts per key for planner.Debounce: an action waits until the observed value (the
// waiting count, a status's fingerprint) has been stable for idle, or max after the first change, so a
// burst of AgentMachines becomes one batch of VMs and a burst of VM phase changes one pool status write.
// The pool's plan reads a burst (window) and says what to keep (remember); the status batch asks wait.
type debouncer struct {
	clock     clock.PassiveClock
	idle, max time.Duration
	mu        sync.Mutex
	state     map[string]planner.Burst
}

func newDebouncer(c clock.PassiveClock, idle, maxWait time.Duration) *debouncer {
	return &debouncer{clock: c, idle: idle, max: maxWait, state: map[string]planner.Burst{}}
}

// settings are the debouncer's windows as the planner takes them.
func (d *debouncer) settings() planner.Debounce { return planner.Debounce{Idle: d.idle, Max: d.max} }

// wait records the current value and returns how long the action should still wait (0: act now).
func (d *debouncer) wait(key string, value int) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, w := d.settings().Observe(d.burstLocked(key), value, d.clock.Now())
	if b != nil {
		d.state[key] = *b
	}
	return w
}

// window returns the burst open for key (nil: none).
func (d *debouncer) window(key string) *planner.Burst {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.burstLocked(key)
}

func (d *debouncer) burstLocked(key string) *planner.Burst {
	if b, ok := d.state[key]; ok {
		return &b
	}
	return nil
}

// remember keeps b as key's open burst; nil forgets it.
func (d *debouncer) remember(key string, b *planner.Burst) {
	if b == nil {
		d.forget(key)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state[key] = *b
}

func (d *debouncer) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.state, key)
}

// lastRun remembers when a periodic job last ran per key.
type lastRun struct {
	mu sync.Mutex
	at map[string]time.Time
}

func newLastRun() *lastRun { return &lastRun{at: map[string]time.Time{}} }

// due reports whether every has elapsed since the last run (or it never ran) and, if so, marks it run.
func (l *lastRun) due(key string, now time.Time, every time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.at[key]; ok && now.Sub(t) < every {
		return false
	}
	l.at[key] = now
	return true
}
