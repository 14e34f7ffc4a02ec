package controllers

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// debouncer batches bursts: an action waits until the observed value (the waiting count, a status's
// fingerprint) has been stable for idle, or max after the first change, so a burst of AgentMachines
// becomes one batch of VMs and a burst of VM phase changes one pool status write.
type debouncer struct {
	clock     clock.PassiveClock
	idle, max time.Duration
	mu        sync.Mutex
	state     map[string]*debounceState
}

type debounceState struct {
	waiting           int
	first, lastChange time.Time
}

func newDebouncer(c clock.PassiveClock, idle, max time.Duration) *debouncer {
	return &debouncer{clock: c, idle: idle, max: max, state: map[string]*debounceState{}}
}

// wait records the current value and returns how long the action should still wait (0: act now).
func (d *debouncer) wait(key string, waiting int) time.Duration {
	if d.idle < 0 {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.clock.Now()
	st := d.state[key]
	if st == nil {
		st = &debounceState{waiting: waiting, first: now, lastChange: now}
		d.state[key] = st
	} else if st.waiting != waiting {
		st.waiting, st.lastChange = waiting, now
	}
	untilIdle := d.idle - now.Sub(st.lastChange)
	untilMax := d.max - now.Sub(st.first)
	w := untilIdle
	if untilMax < w {
		w = untilMax
	}
	if w < 0 {
		return 0
	}
	return w
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
