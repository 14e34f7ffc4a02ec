package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100..1, unsorted
	}
	for _, tc := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"one sample is every percentile", []float64{7}, 99, 7},
		{"median of an odd count is the middle", []float64{9, 1, 5}, 50, 5},
		{"median of an even count is the lower middle (nearest rank)", []float64{4, 1, 3, 2}, 50, 2},
		{"p99 of 100 is the 99th", hundred, 99, 99},
		{"p50 of 100 is the 50th", hundred, 50, 50},
		{"p99 of 10 is the largest", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 80}, 99, 80},
		{"p100 is the largest", []float64{3, 1, 2}, 100, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.xs, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
			}
		})
	}
	if got := percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("percentile of nothing = %v, want NaN", got)
	}
	xs := []float64{3, 1, 2}
	percentile(xs, 50)
	if xs[0] != 3 || xs[1] != 1 {
		t.Errorf("percentile sorted its argument: %v", xs)
	}
}

func TestVMHoursPerDay(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name     string
		samples  []countSample
		from, to time.Time
		want     float64
	}{
		{"a constant 2 VMs is 48 VM-hours a day", []countSample{{at(0), 2}}, at(0), at(60), 48},
		{"half the window at 4, half at 0", []countSample{{at(0), 4}, {at(30), 0}}, at(0), at(60), 48},
		{"before the first sample counts as 0", []countSample{{at(30), 2}}, at(0), at(60), 24},
		{"samples outside the window are clipped", []countSample{{at(-100), 10}, {at(0), 1}, {at(60), 10}}, at(0), at(60), 24},
		{"an empty window costs nothing", []countSample{{at(0), 5}}, at(10), at(10), 0},
		{"no samples cost nothing", nil, at(0), at(60), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := vmHoursPerDay(tc.samples, tc.from, tc.to); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("vmHoursPerDay = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFiguresAndVerdict(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ms := []machineTimes{
		// waited with NoSuitableAgents: measured from the wait, not from the first sight
		{arm: armWithout, seen: at(0), waiting: at(1), bound: at(81), nodeReady: at(321)},
		{arm: armWithout, seen: at(0), waiting: at(0.5), bound: at(90.5), nodeReady: at(330.5)},
		// bound on the provider's first look: measured from the first sight
		{arm: armWith, seen: at(0), bound: at(2), nodeReady: at(242)},
		{arm: armWith, seen: at(0), waiting: at(0.2), bound: at(3.2), nodeReady: at(243.2)},
	}
	f, err := figures(ms)
	if err != nil {
		t.Fatal(err)
	}
	if f[armWithout].p50 != 80 || f[armWithout].p99 != 90 || f[armWithout].waited != 2 {
		t.Errorf("without: p50 %v p99 %v waited %d, want 80, 90, 2", f[armWithout].p50, f[armWithout].p99, f[armWithout].waited)
	}
	if f[armWith].p50 != 2 || f[armWith].p99 != 3 || f[armWith].waited != 1 {
		t.Errorf("with: p50 %v p99 %v waited %d, want 2, 3, 1", f[armWith].p50, f[armWith].p99, f[armWith].waited)
	}
	if f[armWithout].nodeP50 != 320 || f[armWith].nodeP50 != 242 || f[armWith].nodeP99 != 243 {
		t.Errorf("node-ready: without p50 %v, with p50 %v p99 %v; want 320, 242, 243", f[armWithout].nodeP50, f[armWith].nodeP50, f[armWith].nodeP99)
	}
	want := map[arm]int{armWithout: 2, armWith: 2}
	for _, tc := range []struct {
		name     string
		f        map[arm]*armFigures
		want     map[arm]int
		minRatio float64
		errHas   string
	}{
		{"40x faster passes a 10x bar", f, want, 10, ""},
		{"40x faster fails a 50x bar", f, want, 50, "40.0x faster"},
		{"a missing AgentMachine fails", f, map[arm]int{armWithout: 3, armWith: 2}, 10, "without standby: 2 AgentMachines bound, want 3"},
		{"a Node that never joined fails", map[arm]*armFigures{armWithout: f[armWithout], armWith: {samples: f[armWith].samples, p50: f[armWith].p50, node: f[armWith].node[:1]}},
			want, 10, "with standby: 1 Nodes joined, want 2"},
		{"an empty arm fails", map[arm]*armFigures{armWithout: f[armWithout], armWith: {p50: math.NaN()}}, map[arm]int{armWithout: 2}, 10, "with standby: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verdict(tc.f, tc.want, tc.minRatio)
			switch {
			case tc.errHas == "" && err != nil:
				t.Errorf("verdict: %v, want nil", err)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas)):
				t.Errorf("verdict: %v, want an error containing %q", err, tc.errHas)
			}
		})
	}
	if _, err := figures(append(ms, machineTimes{arm: armWith, seen: at(0)})); err == nil || !strings.Contains(err.Error(), "1 AgentMachines never bound") {
		t.Errorf("figures with an unbound AgentMachine: %v, want an error naming it", err)
	}
}
