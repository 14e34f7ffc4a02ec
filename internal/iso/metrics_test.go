package iso

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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
}

func value(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}
