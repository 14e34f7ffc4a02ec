package iso

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

func TestMetricsCountOperationsAndBytes(t *testing.T) {
	uploads := func() float64 {
		return value(metrics.ISOOperations.WithLabelValues(metrics.ISOOpUpload, metrics.ResultSuccess))
	}
	failures := func() float64 {
		return value(metrics.ISOOperations.WithLabelValues(metrics.ISOOpDownload, metrics.ResultFailure))
	}
	up := func() float64 {
		return value(metrics.ISOBytesTransferred.WithLabelValues(metrics.DirectionUpload))
	}
	u0, f0, b0 := uploads(), failures(), up()

	h := newHarness(t, memBackend(t), makeISO(testISOSize, 40))
	h.pass()
	h.server.set(nil, "500")
	h.pool.Annotations = map[string]string{"agent-forge.containeroo.ch/force-iso-refresh": "x"}
	h.pass()
	if uploads()-u0 != 1 || failures()-f0 != 1 || up()-b0 != testISOSize {
		t.Fatalf("uploads +%v failures +%v bytes +%v", uploads()-u0, failures()-f0, up()-b0)
	}
	// Served by the manager's metrics endpoint: registered with controller-runtime's registry.
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
	}
	if !found["agent_forge_iso_operations_total"] || !found["agent_forge_iso_bytes_transferred_total"] {
		t.Fatal("ISO metrics not registered with controller-runtime's registry")
	}
}

func value(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}
