package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

func TestRegisterServesEveryMetricOnceUnderOurPrefix(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	// A second manager in the same process registers again: not an error, no duplicates.
	if err := metrics.Register(reg); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	// Vectors only appear once they have a series.
	metrics.ISOOperations.WithLabelValues(metrics.ISOOpUpload, metrics.ResultSuccess).Add(0)
	metrics.ISOBytesTransferred.WithLabelValues(metrics.DirectionUpload).Add(0)
	metrics.VsphereVMOperations.WithLabelValues("create", "success").Add(0)
	metrics.VsphereCallDuration.WithLabelValues("CreateVM_Task").Observe(0)
	metrics.PoolCapacity.WithLabelValues("ns", "pool", "waiting").Set(0)
	metrics.PoolWaiting.WithLabelValues("ns", "pool").Set(0)
	metrics.VMsRequested.WithLabelValues("ns", "pool", "create").Add(0)
	metrics.VMResources.WithLabelValues("ns", "pool", "vm", "cpus").Set(0)
	metrics.ReconcileDuration.WithLabelValues("pool", "success").Observe(0)

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != len(metrics.All()) {
		t.Fatalf("%d metric families gathered, want %d", len(families), len(metrics.All()))
	}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "agent_forge_") || f.GetHelp() == "" {
			t.Errorf("metric %q (help %q) lacks the agent_forge_ prefix or help", f.GetName(), f.GetHelp())
		}
	}
}
