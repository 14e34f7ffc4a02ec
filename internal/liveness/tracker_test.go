package liveness_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/containeroo/agent-forge-operator/internal/liveness"
)

func TestCheck(t *testing.T) {
	pool := types.NamespacedName{Namespace: "ns1", Name: "workers"}
	vm := types.NamespacedName{Namespace: "ns1", Name: "workers-abcde"}
	type running struct {
		controller string
		object     types.NamespacedName
		deadline   time.Duration
		age        time.Duration
		finished   bool
	}
	cases := []struct {
		name     string
		grace    int
		passes   []running
		wantErr  bool
		mentions []string
	}{
		{name: "nothing running", grace: 2},
		{name: "a pass within its deadline", grace: 2,
			passes: []running{{"vsphereagentpool", pool, 2 * time.Minute, time.Minute, false}}},
		{name: "past its deadline but within the grace", grace: 2,
			passes: []running{{"vsphereagentpool", pool, 2 * time.Minute, 4 * time.Minute, false}}},
		{name: "stuck beyond twice its deadline", grace: 2,
			passes:   []running{{"vsphereagentpool", pool, 2 * time.Minute, 4*time.Minute + time.Second, false}},
			wantErr:  true,
			mentions: []string{"vsphereagentpool", "ns1/workers", "deadline 2m0s"}},
		{name: "a stuck pass that finished no longer counts", grace: 2,
			passes: []running{{"vsphereagentpool", pool, 2 * time.Minute, time.Hour, true}}},
		{name: "one stuck VM pass among healthy ones", grace: 2,
			passes: []running{
				{"vsphereagentpool", pool, 2 * time.Minute, time.Minute, false},
				{"vsphereagent", vm, 10 * time.Minute, 21 * time.Minute, false},
			},
			wantErr:  true,
			mentions: []string{"1 reconcile(s)", "vsphereagent ns1/workers-abcde"}},
		{name: "a pass without a deadline is never stuck", grace: 2,
			passes: []running{{"vsphereagentpool", pool, 0, 24 * time.Hour, false}}},
		{name: "grace factor 3", grace: 3,
			passes: []running{{"vsphereagentpool", pool, time.Minute, 150 * time.Second, false}}},
		{name: "grace below 1 means the default", grace: 0,
			passes:  []running{{"vsphereagentpool", pool, time.Minute, 121 * time.Second, false}},
			wantErr: true, mentions: []string{"limit 2m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			tr := liveness.NewTracker(clk, tc.grace)
			start := clk.Now()
			for _, p := range tc.passes {
				// Each pass started age ago: start them all at their own time, then move to "now".
				clk.SetTime(start.Add(-p.age))
				done := tr.Start(p.controller, p.object, p.deadline)
				if p.finished {
					done()
				}
			}
			clk.SetTime(start)
			err := tr.Check(nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Check() = %v, want error %v", err, tc.wantErr)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("Check() = %q, want it to name %q", err, m)
				}
			}
		})
	}
}

// TestCheckFollowsTheClock drives one pass through its life: healthy, stuck, finished.
func TestCheckFollowsTheClock(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	tr := liveness.NewTracker(clk, 2)
	done := tr.Start("vsphereagentpool", types.NamespacedName{Namespace: "a", Name: "b"}, 10*time.Second)
	if got := tr.Running(); got != 1 {
		t.Fatalf("Running() = %d, want 1", got)
	}
	clk.SetTime(clk.Now().Add(20 * time.Second))
	if err := tr.Check(nil); err != nil {
		t.Fatalf("at exactly twice the deadline: %v, want healthy", err)
	}
	clk.SetTime(clk.Now().Add(time.Millisecond))
	if err := tr.Check(nil); err == nil {
		t.Fatal("past twice the deadline: healthy, want stuck")
	}
	done()
	if err := tr.Check(nil); err != nil {
		t.Fatalf("after the pass ended: %v, want healthy", err)
	}
	if got := tr.Running(); got != 0 {
		t.Fatalf("Running() = %d, want 0", got)
	}
}

// TestNilTracker: controllers built without a manager carry no tracker and must not fail.
func TestNilTracker(t *testing.T) {
	var tr *liveness.Tracker
	tr.Start("x", types.NamespacedName{}, time.Second)()
	if err := tr.Check(nil); err != nil || tr.Running() != 0 {
		t.Fatalf("nil tracker: Check() = %v, Running() = %d", err, tr.Running())
	}
}

// TestHealthzEndpoint serves the check the way the manager does (controller-runtime's healthz handler):
// /healthz answers 200 while passes are healthy and 500 naming the check once one is stuck.
func TestHealthzEndpoint(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	tr := liveness.NewTracker(clk, 2)
	srv := httptest.NewServer(http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{
		"ping": healthz.Ping, "reconcilers": tr.Check}}))
	defer srv.Close()
	get := func() (int, string) {
		t.Helper()
		res, err := srv.Client().Get(srv.URL + "/healthz?verbose=true")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := res.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return res.StatusCode, b.String()
	}
	done := tr.Start("vsphereagentpool", types.NamespacedName{Namespace: "ns", Name: "hung"}, time.Minute)
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("healthy pass: %d %s, want 200", code, body)
	}
	clk.SetTime(clk.Now().Add(3 * time.Minute))
	code, body := get()
	if code != http.StatusInternalServerError || !strings.Contains(body, "[-]reconcilers failed") {
		t.Fatalf("stuck pass: %d %q, want 500 with the reconcilers check failed", code, body)
	}
	done()
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("after the pass ended: %d %s, want 200", code, body)
	}
}
