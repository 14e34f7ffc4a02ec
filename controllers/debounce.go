package controllers

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// debouncer batches bursts of demand: creation waits until the waiting count has been stable for
// idle, or max after the first change, so a burst of AgentMachines becomes one batch of VMs.
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

// wait records the current demand and returns how long creation should still wait (0: create now).
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

// writeBatcher spaces status writes that only move counters, so a burst of VM phase changes becomes a
// few writes instead of one per change. It is a write rate limit, like client-go's, so it uses
// the real clock rather than the injected one (which tests freeze).
type writeBatcher struct {
	clock    clock.PassiveClock
	interval time.Duration
	mu       sync.Mutex
	last     map[string]time.Time
}

func newWriteBatcher(interval time.Duration) *writeBatcher {
	return &writeBatcher{clock: clock.RealClock{}, interval: interval, last: map[string]time.Time{}}
}

// delay returns how long an inventory-only write should wait (0: write now).
func (b *writeBatcher) delay(key string, inventoryOnly bool) time.Duration {
	if !inventoryOnly || b.interval <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.interval - b.clock.Since(b.last[key]); w > 0 {
		return w
	}
	return 0
}

func (b *writeBatcher) wrote(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last[key] = b.clock.Now()
}
