package iso

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

type recordedEvents struct {
	mu     sync.Mutex
	events []string
}

func (r *recordedEvents) Eventf(_, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+action+" "+fmt.Sprintf(note, args...))
}

func waitDone(t *testing.T, done <-chan types.NamespacedName, want types.NamespacedName) {
	t.Helper()
	select {
	case got := <-done:
		if got != want {
			t.Fatalf("completion for %v, want %v", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no completion for %v", want)
	}
}

// A stalled download of one pool neither blocks Ensure nor another pool; a failure backs off on
// the injected clock and a new force token retries at once.
func TestManagerRunsPoolsIndependently(t *testing.T) {
	b := memBackend(t)
	slow := newHarness(t, b, makeISO(testISOSize, 20))
	fast := newHarness(t, b, makeISO(testISOSize, 21))
	fast.pool.Name = "fast"
	slow.server.set(nil, "slow")
	slow.cache.idle = time.Minute // the stall ends when the test releases the server

	done := make(chan types.NamespacedName, 4)
	rec := &recordedEvents{}
	m := NewManager(ManagerOptions{Cache: slow.cache, Clock: slow.clock, Recorder: rec, Log: logr.Discard(),
		OnDone: func(k types.NamespacedName) { done <- k }})
	t.Cleanup(m.Stop)

	job := func(h *harness) Job {
		need := Decide(h.clock.Now(), h.pool, h.source())
		return Job{Object: h.pool.DeepCopy(), Client: b.client, Need: need, Refresh: h.request(need), RetainVersions: 1}
	}
	slowKey, fastKey := types.NamespacedName{Namespace: "ns", Name: "pool"}, types.NamespacedName{Namespace: "ns", Name: "fast"}
	if s := m.Ensure(slowKey, job(slow)); s.State != EnsureStarted {
		t.Fatalf("slow: %+v", s)
	}
	if s := m.Ensure(slowKey, job(slow)); s.State != EnsureRunning {
		t.Fatalf("slow again: %+v", s)
	}
	if s := m.Ensure(fastKey, job(fast)); s.State != EnsureStarted {
		t.Fatalf("fast: %+v", s)
	}
	waitDone(t, done, fastKey)
	res, ok := m.Result(fastKey)
	if !ok || res.Refresh == nil || res.Refresh.Outcome != OutcomeUploaded || res.Condition.Reason != afv1.ReasonCached || res.Seq != 1 {
		t.Fatalf("fast result %+v", res)
	}
	if !m.Running(slowKey) {
		t.Fatal("the slow pool finished early")
	}

	slow.server.closeOnce.Do(func() { close(slow.server.release) }) // the server gives up mid-body
	waitDone(t, done, slowKey)
	res, _ = m.Result(slowKey)
	if res.Refresh.Outcome != OutcomeFailed || res.Failures != 1 || res.Condition.Reason != afv1.ReasonDownloadFailed {
		t.Fatalf("slow result %+v", res)
	}
	slow.server.set(nil, "")
	if s := m.Ensure(slowKey, job(slow)); s.State != EnsureBackingOff || s.RetryAfter != 30*time.Second {
		t.Fatalf("after failure: %+v", s)
	}
	slow.clock.Step(31 * time.Second)
	if s := m.Ensure(slowKey, job(slow)); s.State != EnsureStarted {
		t.Fatalf("after backoff: %+v", s)
	}
	waitDone(t, done, slowKey)
	res, _ = m.Result(slowKey)
	if res.Refresh.Outcome != OutcomeUploaded || res.Failures != 0 || res.Seq != 2 {
		t.Fatalf("retry result %+v", res)
	}
	// Apply the result like the controller does; then nothing is left to do.
	slow.pool.Status.ISO = &res.Status
	if s := m.Ensure(slowKey, job(slow)); s.State != EnsureIdle {
		t.Fatalf("up to date: %+v", s)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.events) < 3 {
		t.Fatalf("events %v", rec.events)
	}
	for _, e := range rec.events {
		if f := strings.Fields(e); len(f) < 3 || (f[2] != ActionRefreshISO && f[2] != ActionPruneISO) {
			t.Fatalf("event without an ISO action: %s", e)
		}
		if contains([]string{e}, testToken) {
			t.Fatalf("event leaks the token: %s", e)
		}
	}
}

func TestManagerPruneOnlyJobsAreSpaced(t *testing.T) {
	b := memBackend(t)
	h := newHarness(t, b, makeISO(testISOSize, 22))
	h.pass()
	h.pool.Status.ISO.History = append(h.pool.Status.ISO.History, afv1.ISOVersion{Path: "[other] x.iso", PruneError: "x"})
	done := make(chan types.NamespacedName, 4)
	m := NewManager(ManagerOptions{Cache: h.cache, Clock: h.clock, OnDone: func(k types.NamespacedName) { done <- k }})
	t.Cleanup(m.Stop)
	key := types.NamespacedName{Namespace: "ns", Name: "pool"}
	need := Decide(h.clock.Now(), h.pool, h.source())
	if need.Needed || !need.PrunePending {
		t.Fatalf("need %+v", need)
	}
	j := Job{Client: b.client, Need: need, Refresh: h.request(need), RetainVersions: 1}
	if s := m.Ensure(key, j); s.State != EnsureStarted {
		t.Fatalf("%+v", s)
	}
	waitDone(t, done, key)
	res, _ := m.Result(key)
	if res.Refresh != nil || res.Condition != nil || len(res.Status.History) != 1 { // no refresh ran before
		t.Fatalf("prune-only result %+v", res)
	}
	if s := m.Ensure(key, j); s.State != EnsureIdle || s.RetryAfter != 5*time.Minute {
		t.Fatalf("%+v", s)
	}
	// A deleted pool's state goes with one Forget (the pool's poolmemory record).
	if !m.Holds(key) {
		t.Fatal("the manager holds nothing of the pool after its jobs")
	}
	m.Forget(key)
	if m.Holds(key) {
		t.Fatal("the manager still holds the pool after Forget")
	}
}
