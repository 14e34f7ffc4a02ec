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
	metrics.VCenterCircuitOpen.WithLabelValues("vc.example.com:443").Set(0)
	metrics.PoolCapacity.WithLabelValues("ns", "pool", "waiting").Set(0)
	metrics.PoolWaiting.WithLabelValues("ns", "pool").Set(0)
	metrics.PoolDemandUnobserved.WithLabelValues("ns", "pool", "HostedClusterMismatch").Set(0)
	metrics.PoolHeadroom.WithLabelValues("ns", "pool", "zone-a").Set(0)
	metrics.VMsRequested.WithLabelValues("ns", "pool", "create").Add(0)
	metrics.VMResources.WithLabelValues("ns", "pool", "vm", "cpus").Set(0)
	metrics.ReconcileDuration.WithLabelValues("pool", "success").Observe(0)
	metrics.PoolPhaseDuration.WithLabelValues("plan").Observe(0)
	metrics.CRDSchemaOutdated.WithLabelValues("vsphereagents.agent-forge.containeroo.ch").Set(0)
	metrics.PoolStandbyDesired.WithLabelValues("ns", "pool").Set(0)
	metrics.PoolStandbyReady.WithLabelValues("ns", "pool").Set(0)
	metrics.DemandToBound.WithLabelValues("ns", "pool").Observe(0)
	metrics.PoolRegistrationBreakerTrips.WithLabelValues("ns", "pool").Set(0)
	metrics.PoolVCenterTLSUnverified.WithLabelValues("ns", "pool").Set(0)
	metrics.PoolDriftedWorkers.WithLabelValues("ns", "pool").Set(0)

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

// TestNoMetricUsesTheNamespaceLabel: Prometheus sets "namespace" to the scraped Service's namespace (the
// operator's), so a metric of ours carrying "namespace" would be renamed exported_namespace and alerts would
// report the operator's namespace. Per-pool metrics say pool_namespace instead.
func TestNoMetricUsesTheNamespaceLabel(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	metrics.PoolCapacity.WithLabelValues("clusters", "workers", "waiting").Set(1)
	metrics.PoolWaiting.WithLabelValues("clusters", "workers").Set(1)
	metrics.PoolHeadroom.WithLabelValues("clusters", "workers", "zone-a").Set(3)
	metrics.VMsRequested.WithLabelValues("clusters", "workers", "create").Add(0)
	metrics.VMResources.WithLabelValues("clusters", "workers", "vm", "cpus").Set(4)
	metrics.PoolStandbyReady.WithLabelValues("clusters", "workers").Set(2)
	metrics.DemandToBound.WithLabelValues("clusters", "workers").Observe(3)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	pools := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "namespace", "exported_namespace":
					t.Errorf("metric %s carries label %q; use %q", f.GetName(), l.GetName(), metrics.LabelPoolNamespace)
				case metrics.LabelPoolNamespace:
					if l.GetValue() == "clusters" {
						pools++
					}
				}
			}
		}
	}
	if pools < 4 {
		t.Errorf("only %d per-pool series carry %s=clusters, want at least 4", pools, metrics.LabelPoolNamespace)
	}
}
