package main

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// phaseTimes is the pool passes' time per phase (agent_forge_pool_phase_duration_seconds): which step
// holds the pool controller's workers.
type phaseTimes map[string]struct {
	seconds float64
	count   uint64
}

func readPhaseTimes(g prometheus.Gatherer) phaseTimes {
	out := phaseTimes{}
	families, err := g.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		if f.GetName() != "agent_forge_pool_phase_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					h := m.GetHistogram()
					out[l.GetValue()] = struct {
						seconds float64
						count   uint64
					}{h.GetSampleSum(), h.GetSampleCount()}
				}
			}
		}
	}
	return out
}

// logSince prints each phase's total and mean seconds after before, the longest first.
func (p phaseTimes) logSince(before phaseTimes) {
	type row struct {
		phase   string
		seconds float64
		count   uint64
	}
	var rows []row
	var total float64
	for phase, v := range p {
		r := row{phase, v.seconds - before[phase].seconds, v.count - before[phase].count}
		if r.count == 0 {
			continue
		}
		rows = append(rows, r)
		total += r.seconds
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].seconds > rows[j].seconds })
	logf("pool pass time by phase (worker-seconds, %.0f in all):", total)
	for _, r := range rows {
		logf("  %8.1f s  %5.1f%%  %-15s %6d runs, mean %.3f s", r.seconds, 100*r.seconds/max(total, 1e-9), r.phase, r.count, r.seconds/float64(r.count))
	}
}
