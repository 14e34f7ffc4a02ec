package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiServerRequests reads the API server's own request counters (apiserver_request_total), summed by
// verb and resource[/subresource]: every client's requests, the operator's, the world's, CAPI core's
// and the bench's, as the API server served them.
func apiServerRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	family, ok := families["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range family.GetMetric() {
		l := labelsOf(m)
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out, nil
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// requestsSince returns after - before, most frequent first (at most top entries).
func requestsSince(before, after map[string]float64, top int) []target {
	var out []target
	for k, v := range after {
		if d := int(v - before[k]); d > 0 {
			out = append(out, target{k, d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || (out[i].n == out[j].n && out[i].what < out[j].what) })
	if len(out) > top {
		out = out[:top]
	}
	return out
}
