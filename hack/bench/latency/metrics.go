package main

import (
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// histogramName is the operator's own demand->bound histogram (internal/metrics).
const histogramName = "agent_forge_demand_to_bound_seconds"

// logHistogram sets the operator's histogram beside what the bench saw: per arm its count and mean,
// and the bench's count and mean over the AgentMachines that waited with NoSuitableAgents (the only
// ones the operator can time: it starts its clock at the first pass that sees one waiting).
func logHistogram(ms []machineTimes, armOf map[string]arm) {
	bench := map[arm][]float64{}
	for _, m := range ms {
		if !m.waiting.IsZero() && !m.bound.IsZero() {
			bench[m.arm] = append(bench[m.arm], m.bound.Sub(m.waiting).Seconds())
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		logf("operator histogram: %v", err)
		return
	}
	count, sum := map[arm]uint64{}, map[arm]float64{}
	for _, f := range families {
		if f.GetName() != histogramName {
			continue
		}
		for _, m := range f.GetMetric() {
			ns := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == metrics.LabelPoolNamespace {
					ns = l.GetValue()
				}
			}
			a, ok := armOf[ns]
			if !ok {
				continue
			}
			count[a] += m.GetHistogram().GetSampleCount()
			sum[a] += m.GetHistogram().GetSampleSum()
		}
	}
	for _, a := range []arm{armWithout, armWith} {
		var benchSum float64
		for _, s := range bench[a] {
			benchSum += s
		}
		logf("%s: operator's %s: %d samples, mean %s; the bench, waiting->bound: %d samples, mean %s", a, histogramName,
			count[a], seconds(mean(sum[a], int(count[a]))), len(bench[a]), seconds(mean(benchSum, len(bench[a]))))
	}
}

func mean(sum float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
