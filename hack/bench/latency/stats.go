package main

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// arm is one side of the comparison: pools without standby and pools with it, same bursts.
type arm int

const (
	armWithout arm = iota
	armWith
)

func (a arm) String() string {
	if a == armWith {
		return "with standby"
	}
	return "without standby"
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of xs: the smallest value with at
// least p % of the samples at or below it. NaN for no samples.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// countSample is how many standby VMs there were from at until the next sample.
type countSample struct {
	at time.Time
	n  int
}

// vmHoursPerDay integrates a count sampled over [from, to] (each sample holds until the next one, the
// last until to; the count before the first sample is taken as 0) and scales its mean to a day.
func vmHoursPerDay(samples []countSample, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	var vmSeconds float64
	for i, s := range samples {
		end := to
		if i+1 < len(samples) {
			end = samples[i+1].at
		}
		start := s.at
		if start.Before(from) {
			start = from
		}
		if end.After(to) {
			end = to
		}
		if end.After(start) {
			vmSeconds += float64(s.n) * end.Sub(start).Seconds()
		}
	}
	return vmSeconds / to.Sub(from).Seconds() * 24
}

// armFigures are one arm's latencies in seconds: demand->bound (the Agent reserved) and demand->Node
// Ready (the installed host's Node joined, its Machine's nodeRef).
type armFigures struct {
	samples  []float64
	p50, p99 float64
	// waited counts the samples that showed NoSuitableAgents before they were bound.
	waited int
	// node are the demand->Node Ready samples (AgentMachines whose Node joined).
	node             []float64
	nodeP50, nodeP99 float64
}

// figures splits the tracked AgentMachines by arm; it fails when one is not bound.
func figures(ms []machineTimes) (map[arm]*armFigures, error) {
	out := map[arm]*armFigures{armWithout: {}, armWith: {}}
	unbound := 0
	for _, m := range ms {
		if m.bound.IsZero() {
			unbound++
			continue
		}
		f := out[m.arm]
		f.samples = append(f.samples, m.bound.Sub(m.start()).Seconds())
		if !m.waiting.IsZero() {
			f.waited++
		}
		if !m.nodeReady.IsZero() {
			f.node = append(f.node, m.nodeReady.Sub(m.start()).Seconds())
		}
	}
	for _, f := range out {
		f.p50, f.p99 = percentile(f.samples, 50), percentile(f.samples, 99)
		f.nodeP50, f.nodeP99 = percentile(f.node, 50), percentile(f.node, 99)
	}
	if unbound > 0 {
		return out, fmt.Errorf("%d AgentMachines never bound", unbound)
	}
	return out, nil
}

// verdict is the bench's pass/fail: every arm has samples (as many as it asked for), and standby is at
// least minRatio times faster at p50.
func verdict(f map[arm]*armFigures, want map[arm]int, minRatio float64) error {
	var errs []string
	for _, a := range []arm{armWithout, armWith} {
		if got := len(f[a].samples); got != want[a] || got == 0 {
			errs = append(errs, fmt.Sprintf("%s: %d AgentMachines bound, want %d", a, got, want[a]))
		}
		if got := len(f[a].node); got != want[a] {
			errs = append(errs, fmt.Sprintf("%s: %d Nodes joined, want %d", a, got, want[a]))
		}
	}
	if len(errs) == 0 {
		if ratio := f[armWithout].p50 / f[armWith].p50; !(ratio >= minRatio) { // NaN fails too
			errs = append(errs, fmt.Sprintf("standby is %.1fx faster at p50 (%.1f s vs %.1f s), want at least %.0fx",
				ratio, f[armWith].p50, f[armWithout].p50, minRatio))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// seconds prints a latency as the bar's line does: one decimal below 10 s, whole seconds above.
func seconds(s float64) string {
	if s < 10 {
		return fmt.Sprintf("%.1f s", s)
	}
	return fmt.Sprintf("%.0f s", s)
}
