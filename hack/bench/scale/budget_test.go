package main

import (
	"strings"
	"testing"
	"time"
)

// TestOverBudget: the bench fails on each figure above its budget, and only then.
func TestOverBudget(t *testing.T) {
	for _, tc := range []struct {
		name          string
		writes, calls float64
		idle          int64
		plateaus      []plateau
		want          []string // substrings of the error; none: no error
	}{
		{name: "within", writes: 6, calls: 10},
		{name: "writes", writes: 6.01, calls: 9, want: []string{"6.01 API writes/VM > 6"}},
		{name: "calls", writes: 5, calls: 10.5, want: []string{"10.50 vSphere calls/VM > 10"}},
		{name: "idle", writes: 5, calls: 9, idle: 1, want: []string{"1 writes while idle > 0"}},
		{name: "a plateau the world held passes", writes: 5, calls: 9, plateaus: []plateau{{Stage: stageBound, From: 0, To: 60 * time.Second, Owner: ownerWorld}}},
		{name: "a plateau the operator held busy passes", writes: 5, calls: 9, plateaus: []plateau{{Stage: stageRequested, To: 20 * time.Second, Owner: ownerOperator, Cause: "worker count"}}},
		{name: "a plateau the operator held idle fails", writes: 5, calls: 9,
			plateaus: []plateau{{Stage: stageRequested, From: 270 * time.Second, To: 342 * time.Second, Owner: ownerOperator, Cause: "timers: pool queue empty", OperatorIdle: true}},
			want:     []string{"the operator held requested idle for 72 s (timers: pool queue empty)"}},
		{name: "all", writes: 9.2, calls: 16.8, idle: 3, want: []string{"9.20 API writes/VM", "16.80 vSphere calls/VM", "3 writes while idle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := overBudget(tc.writes, tc.calls, tc.idle, 6, 10, tc.plateaus)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("within budget, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error naming %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
