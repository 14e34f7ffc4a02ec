package pool

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestDebouncer(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		steps []struct {
			advance time.Duration
			waiting int
		}
		want time.Duration
	}{
		{name: "first sight of demand waits the idle gap", steps: steps(0, 3), want: time.Second},
		{name: "stable demand after the idle gap creates", steps: steps(0, 3, time.Second, 3), want: 0},
		{name: "a growing burst keeps waiting", steps: steps(0, 1, 500*time.Millisecond, 2, 500*time.Millisecond, 3), want: time.Second},
		{name: "a burst never waits past the maximum", steps: steps(0, 1, 4*time.Second, 2, 4*time.Second, 3, 1900*time.Millisecond, 4), want: 100 * time.Millisecond},
		{name: "after the maximum it creates even while demand still grows", steps: steps(0, 1, 5*time.Second, 2, 5*time.Second, 3), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			d := newDebouncer(clk, time.Second, 10*time.Second)
			var got time.Duration
			for _, s := range tt.steps {
				clk.SetTime(clk.Now().Add(s.advance))
				got = d.wait("pool", s.waiting)
			}
			if got != tt.want {
				t.Fatalf("wait = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDebouncerDisabled(t *testing.T) {
	d := newDebouncer(clocktesting.NewFakePassiveClock(time.Now()), -1, -1)
	if got := d.wait("pool", 5); got != 0 {
		t.Fatalf("disabled debouncer waits %s", got)
	}
}

func steps(pairs ...any) []struct {
	advance time.Duration
	waiting int
} {
	var out []struct {
		advance time.Duration
		waiting int
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		var adv time.Duration
		switch v := pairs[i].(type) {
		case time.Duration:
			adv = v
		case int:
			adv = time.Duration(v)
		}
		out = append(out, struct {
			advance time.Duration
			waiting int
		}{adv, pairs[i+1].(int)})
	}
	return out
}
