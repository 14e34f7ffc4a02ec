package pool

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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

// ForgetPool drops a deleted pool's burst (a poolmemory Record; the key is the pool's "<ns>/<name>").
func (d *debouncer) ForgetPool(pool types.NamespacedName) { d.forget(pool.String()) }

// HoldsPool reports whether a burst of the pool is open.
func (d *debouncer) HoldsPool(pool types.NamespacedName) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.state[pool.String()]
	return ok
}

// lastRun remembers when a periodic job last ran per pool. An entry is the pool's of that UID: a pool
// deleted and created again under its name starts over.
type lastRun struct {
	mu sync.Mutex
	at map[types.NamespacedName]ranAt
}

type ranAt struct {
	uid types.UID
	at  time.Time
}

func newLastRun() *lastRun { return &lastRun{at: map[types.NamespacedName]ranAt{}} }

// due reports whether every has elapsed since the pool's last run (or it never ran) and, if so, marks it run.
func (l *lastRun) due(pool types.NamespacedName, uid types.UID, now time.Time, every time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.at[pool]; ok && r.uid == uid && now.Sub(r.at) < every {
		return false
	}
	l.at[pool] = ranAt{uid: uid, at: now}
	return true
}

// ForgetPool drops a deleted pool's last run (a poolmemory Record).
func (l *lastRun) ForgetPool(pool types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.at, pool)
}

// HoldsPool reports whether the pool's last run is remembered.
func (l *lastRun) HoldsPool(pool types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.at[pool]
	return ok
}
