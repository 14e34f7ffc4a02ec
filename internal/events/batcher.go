package events

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

// Emit writes one Event (type Normal) about regarding.
type Emit func(regarding *corev1.ObjectReference, reason, action, note string)

// BatcherOptions configure a Batcher.
type BatcherOptions struct {
	// Clock decides when a batch is due (a fake one in tests).
	Clock clock.WithTicker
	// Idle: a batch is flushed once no line was added for Idle; Max: at the latest Max after its first
	// line. A negative Idle disables batching: every line is emitted at once.
	Idle, Max time.Duration
	// NoteLimit is the longest note in bytes an Event may carry (events.k8s.io/v1: 1024).
	NoteLimit int
	Emit      Emit
}

// key is one batch: the same object, reason, action and summary (a summary may name what its lines
// share, such as the ISO ejected from every VM of the batch).
type key struct {
	ref                     corev1.ObjectReference
	reason, action, summary string
}

type batch struct {
	summary     string // fmt format with one %d: the number of lines in the Event
	lines       []string
	first, last time.Time
}

// Batcher collects lines per (object, reason, action) and emits them as Events once a batch stood still
// for Idle or is Max old, and everything it holds when it stops (a clean shutdown loses nothing; a crash
// loses the batches not yet flushed, which is why the per-VM record lives in the VM's conditions). It
// is a manager Runnable (Start); after it stopped, lines are emitted at once.
type Batcher struct {
	o       BatcherOptions
	mu      sync.Mutex
	batches map[key]*batch
	stopped bool
	wake    chan struct{}
}

// NewBatcher returns a Batcher; Start runs its flush loop.
func NewBatcher(o BatcherOptions) *Batcher {
	if o.NoteLimit <= 0 {
		o.NoteLimit = 1024
	}
	return &Batcher{o: o, batches: map[key]*batch{}, wake: make(chan struct{}, 1)}
}

// Add records one line (one VM's outcome) for the batch of ref, reason and action. summary is the
// note's head, a fmt format with one %d for the number of lines the Event names; lines with another
// summary make a batch of their own.
func (b *Batcher) Add(ref corev1.ObjectReference, reason, action, summary, line string) {
	k := key{ref: ref, reason: reason, action: action, summary: summary}
	b.mu.Lock()
	if b.stopped || b.o.Idle < 0 {
		b.mu.Unlock()
		b.emit(k, &batch{summary: summary, lines: []string{line}})
		return
	}
	now := b.o.Clock.Now()
	bt, ok := b.batches[k]
	if !ok {
		bt = &batch{summary: summary, first: now}
		b.batches[k] = bt
	}
	bt.lines, bt.last = append(bt.lines, line), now
	b.mu.Unlock()
	if !ok { // a new batch may be due before the loop's current wait ends
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// FlushDue emits every batch that is due now and returns how long until the next one is (0: none held).
func (b *Batcher) FlushDue() time.Duration {
	now := b.o.Clock.Now()
	var due []key
	var dueBatches []*batch
	next := time.Duration(0)
	b.mu.Lock()
	for k, bt := range b.batches {
		left := min(bt.last.Add(b.o.Idle).Sub(now), bt.first.Add(b.o.Max).Sub(now))
		if left <= 0 {
			due, dueBatches = append(due, k), append(dueBatches, bt)
			delete(b.batches, k)
			continue
		}
		if next == 0 || left < next {
			next = left
		}
	}
	b.mu.Unlock()
	for i := range due {
		b.emit(due[i], dueBatches[i])
	}
	return next
}

// Stop emits everything held and makes later lines go out at once.
func (b *Batcher) Stop() {
	b.mu.Lock()
	b.stopped = true
	held := b.batches
	b.batches = map[key]*batch{}
	b.mu.Unlock()
	for k, bt := range held {
		b.emit(k, bt)
	}
}

// Start flushes due batches until ctx ends, then flushes the rest (Stop).
func (b *Batcher) Start(ctx context.Context) error {
	defer b.Stop()
	for {
		wait := b.FlushDue()
		var timer clock.Timer
		var fire <-chan time.Time
		if wait > 0 {
			timer = b.o.Clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-b.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// NeedLeaderElection is false: only the leader's controllers add lines, and every replica flushes what
// it holds when it stops.
func (b *Batcher) NeedLeaderElection() bool { return false }

// emit writes bt as one Event, or several when the lines do not fit one note.
func (b *Batcher) emit(k key, bt *batch) {
	for _, note := range Notes(bt.summary, bt.lines, b.o.NoteLimit) {
		b.o.Emit(&k.ref, k.reason, k.action, note)
	}
}

// Notes packs lines (in name order) into as few notes "<summary>: line; line" of at most limit bytes
// as fit, each summary counting the lines of its note. A line too long for a note alone gets its own
// note (the recorder cuts it).
func Notes(summary string, lines []string, limit int) []string {
	sorted := append([]string(nil), lines...)
	sort.Strings(sorted)
	render := func(ls []string) string {
		return fmt.Sprintf(summary, len(ls)) + ": " + strings.Join(ls, "; ")
	}
	var out []string
	var cur []string
	for _, l := range sorted {
		if len(cur) > 0 && len(render(append(cur[:len(cur):len(cur)], l))) > limit {
			out = append(out, render(cur))
			cur = nil
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		out = append(out, render(cur))
	}
	return out
}
