package events

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

type event struct{ pool, reason, note string }

type sink struct {
	mu  sync.Mutex
	got []event
}

func (s *sink) emit(ref *corev1.ObjectReference, reason, _ string, note string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, event{pool: ref.Name, reason: reason, note: note})
}

func (s *sink) events() []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]event(nil), s.got...)
}

func pool(name string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "VsphereAgentPool", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}
}

const created = "created and powered on %d VM(s)"

func newBatcher(idle time.Duration) (*Batcher, *clocktesting.FakeClock, *sink) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := &sink{}
	return NewBatcher(BatcherOptions{Clock: clk, Idle: idle, Max: 30 * time.Second, NoteLimit: 1024, Emit: s.emit}), clk, s
}

// step is one moment of a scenario: advance the clock, add lines, then flush what is due.
type step struct {
	advance time.Duration
	add     []string // "pool/reason/vm"
	want    []event  // Events emitted by this step's FlushDue
}

func TestBatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{{
		name: "a burst is one Event naming every VM, flushed once it stood still for the interval",
		steps: []step{
			{add: []string{"a/VMCreated/vm-2", "a/VMCreated/vm-1"}},
			{advance: time.Second, add: []string{"a/VMCreated/vm-3"}},
			{advance: 1999 * time.Millisecond},
			{advance: time.Millisecond, want: []event{{"a", "VMCreated", "created and powered on 3 VM(s): vm-1; vm-2; vm-3"}}},
			{advance: time.Hour},
		},
	}, {
		name: "a batch that never stands still is flushed at the maximum",
		steps: func() []step {
			var out []step
			for i := 0; i < 20; i++ { // one line every 1.5 s: never idle for 2 s
				out = append(out, step{advance: 1500 * time.Millisecond, add: []string{fmt.Sprintf("a/VMCreated/vm-%02d", i)}})
			}
			// first line at 1.5 s, the maximum (30 s) ends at 31.5 s, 20 lines were added by 30 s
			out = append(out, step{advance: 1500 * time.Millisecond, want: []event{{"a", "VMCreated", "created and powered on 20 VM(s): " + joinVMs(0, 20)}}})
			return out
		}(),
	}, {
		name: "pools and reasons are batched apart",
		steps: []step{
			{add: []string{"a/VMCreated/vm-1", "b/VMCreated/vm-9", "a/ISOEjected/vm-0"}},
			{advance: 2 * time.Second, want: []event{
				{"a", "ISOEjected", "created and powered on 1 VM(s): vm-0"},
				{"a", "VMCreated", "created and powered on 1 VM(s): vm-1"},
				{"b", "VMCreated", "created and powered on 1 VM(s): vm-9"},
			}},
		},
	}, {
		name: "a later batch of the same pool is its own Event",
		steps: []step{
			{add: []string{"a/VMCreated/vm-1"}},
			{advance: 2 * time.Second, want: []event{{"a", "VMCreated", "created and powered on 1 VM(s): vm-1"}}},
			{advance: time.Minute, add: []string{"a/VMCreated/vm-2"}},
			{advance: 2 * time.Second, want: []event{{"a", "VMCreated", "created and powered on 1 VM(s): vm-2"}}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b, clk, s := newBatcher(2 * time.Second)
			seen := 0
			for i, st := range tc.steps {
				clk.Step(st.advance)
				for _, a := range st.add {
					p := strings.SplitN(a, "/", 3)
					b.Add(pool(p[0]), p[1], "CreateVM", created, p[2])
				}
				b.FlushDue()
				got := s.events()[seen:]
				seen = len(s.events())
				sortEvents(got)
				if fmt.Sprint(got) != fmt.Sprint(st.want) {
					t.Fatalf("step %d: emitted %v, want %v", i, got, st.want)
				}
			}
		})
	}
}

func TestAnotherSummaryIsABatchOfItsOwn(t *testing.T) {
	b, clk, s := newBatcher(2 * time.Second)
	// A refresh between two ejections: each Event names the ISO its VMs had, never one for both.
	b.Add(pool("a"), "ISOEjected", "EjectISO", "ejected [ds] old.iso from %d VM(s)", "vm-1")
	b.Add(pool("a"), "ISOEjected", "EjectISO", "ejected [ds] new.iso from %d VM(s)", "vm-2")
	b.Add(pool("a"), "ISOEjected", "EjectISO", "ejected [ds] old.iso from %d VM(s)", "vm-3")
	clk.Step(2 * time.Second)
	b.FlushDue()
	var notes []string
	for _, e := range s.events() {
		notes = append(notes, e.note)
	}
	want := []string{"ejected [ds] new.iso from 1 VM(s): vm-2", "ejected [ds] old.iso from 2 VM(s): vm-1; vm-3"}
	sort.Strings(notes)
	if fmt.Sprint(notes) != fmt.Sprint(want) {
		t.Fatalf("notes %q, want %q", notes, want)
	}
}

func joinVMs(from, to int) string {
	var names []string
	for i := from; i < to; i++ {
		names = append(names, fmt.Sprintf("vm-%02d", i))
	}
	return strings.Join(names, "; ")
}

func sortEvents(es []event) {
	for i := range es {
		for j := i + 1; j < len(es); j++ {
			if es[j].pool+es[j].reason < es[i].pool+es[i].reason {
				es[i], es[j] = es[j], es[i]
			}
		}
	}
}

func TestSplitKeepsEveryNoteUnderTheLimitAndNamesEveryVMOnce(t *testing.T) {
	b, clk, s := newBatcher(2 * time.Second)
	var want []string
	for i := 0; i < 100; i++ {
		line := fmt.Sprintf("VsphereAgent pool-a-%03d: VM pool-a-%03d, instance UUID 4203c1de-0000-4000-8000-%012d", i, i, i)
		want = append(want, line)
		b.Add(pool("a"), "VMCreated", "CreateVM", created, line)
	}
	clk.Step(2 * time.Second)
	b.FlushDue()
	got := s.events()
	if len(got) < 2 {
		t.Fatalf("100 lines of ~90 bytes in %d Event(s), want a split", len(got))
	}
	named := map[string]int{}
	total := 0
	for _, e := range got {
		if len(e.note) > 1024 {
			t.Fatalf("note of %d bytes exceeds the 1 kB limit: %q", len(e.note), e.note)
		}
		head, body, ok := strings.Cut(e.note, ": ")
		if !ok {
			t.Fatalf("note without a summary: %q", e.note)
		}
		lines := strings.Split(body, "; ")
		if head != fmt.Sprintf(created, len(lines)) {
			t.Fatalf("summary %q does not count its %d lines", head, len(lines))
		}
		for _, l := range lines {
			named[l]++
		}
		total += len(lines)
	}
	if total != len(want) {
		t.Fatalf("the Events name %d lines, want %d", total, len(want))
	}
	for _, l := range want {
		if named[l] != 1 {
			t.Fatalf("line %q named %d times, want once", l, named[l])
		}
	}
	// Packed: no Event but the last could have taken the first line of the next one.
	for i := 0; i+1 < len(got); i++ {
		next, _, _ := strings.Cut(strings.SplitN(got[i+1].note, ": ", 2)[1], "; ")
		if len(got[i].note)+len("; ")+len(next)+1 <= 1024 { // +1: the count may gain a digit
			t.Fatalf("Event %d (%d bytes) had room for %q", i, len(got[i].note), next)
		}
	}
}

func TestNotesGivesAnOversizedLineItsOwnNote(t *testing.T) {
	long := strings.Repeat("x", 2000)
	got := Notes(created, []string{"a", long, "b"}, 1024)
	if len(got) != 2 || got[0] != "created and powered on 2 VM(s): a; b" || !strings.HasSuffix(got[1], long) {
		t.Fatalf("notes %q", got)
	}
}

func TestNegativeIntervalEmitsAtOnce(t *testing.T) {
	b, _, s := newBatcher(-1)
	b.Add(pool("a"), "VMCreated", "CreateVM", created, "vm-1")
	if got := s.events(); len(got) != 1 || got[0].note != "created and powered on 1 VM(s): vm-1" {
		t.Fatalf("emitted %v, want the line at once", got)
	}
}

// The Runnable: it wakes on the clock for a new batch, flushes what it holds when stopped, and emits
// lines added after it stopped at once.
func TestStartFlushesOnTheClockAndOnStop(t *testing.T) {
	b, clk, s := newBatcher(2 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Start(ctx) }()

	b.Add(pool("a"), "VMCreated", "CreateVM", created, "vm-1")
	waitFor(t, "the loop's timer for the new batch", func() bool { return clk.HasWaiters() })
	if n := len(s.events()); n != 0 {
		t.Fatalf("%d Event(s) before the interval passed", n)
	}
	clk.Step(2 * time.Second)
	waitFor(t, "the flush at the interval", func() bool { return len(s.events()) == 1 })

	b.Add(pool("a"), "VMCreated", "CreateVM", created, "vm-2")
	b.Add(pool("b"), "ISOEjected", "EjectISO", created, "vm-3")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start returned %v, want nil", err)
	}
	got := s.events()
	if len(got) != 3 {
		t.Fatalf("after stop: %v, want the two held batches flushed", got)
	}
	b.Add(pool("a"), "VMCreated", "CreateVM", created, "vm-4")
	if got := s.events(); len(got) != 4 || got[3].note != "created and powered on 1 VM(s): vm-4" {
		t.Fatalf("a line after stop: %v, want it emitted at once", got)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // the loop runs in its own goroutine; nothing time-based waits here
	}
}
