package events

import (
	"testing"
	"time"
)

func TestEventLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at     time.Duration
		topic  string
		reason string
		clear  bool
		want   bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"first refusal is announced", []step{{0, "a", "X", false, true}}},
		{"same reason within the interval is not", []step{{0, "a", "X", false, true}, {9 * time.Minute, "a", "X", false, false}}},
		{"same reason after the interval is", []step{{0, "a", "X", false, true}, {10 * time.Minute, "a", "X", false, true}}},
		{"a new reason is announced at once", []step{{0, "a", "X", false, true}, {time.Second, "a", "Y", false, true}}},
		{"topics are independent", []step{{0, "a", "X", false, true}, {time.Second, "b", "X", false, true}}},
		{"a resolved refusal that returns is announced at once", []step{{0, "a", "X", false, true}, {time.Second, "a", "", true, false}, {2 * time.Second, "a", "X", false, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l EventLimiter
			for i, s := range tt.steps {
				if s.clear {
					l.Clear(s.topic)
					continue
				}
				if got := l.Allow(s.topic, s.reason, t0.Add(s.at)); got != s.want {
					t.Fatalf("step %d: allow = %t, want %t", i, got, s.want)
				}
			}
		})
	}
}
