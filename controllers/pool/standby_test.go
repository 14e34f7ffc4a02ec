package pool

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// TestBoundLatency: an AgentMachine first seen waiting gives one sample, from that first sight to the
// pass that sees its agentRef; one bound before it was seen waiting, one deleted and one gone give none.
func TestBoundLatency(t *testing.T) {
	pool := types.NamespacedName{Namespace: "latency-ns", Name: "latency-pool"}
	hist := metrics.DemandToBound.WithLabelValues(pool.Namespace, pool.Name)
	t.Cleanup(func() { metrics.DemandToBound.DeleteLabelValues(pool.Namespace, pool.Name) })
	l := newBoundLatency()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	waits := agents.AgentMachine{Name: "a", UID: "a"}
	early := agents.AgentMachine{Name: "b", UID: "b", AgentRef: "agent-b"} // served before any pass saw it wait
	dropped := agents.AgentMachine{Name: "c", UID: "c"}
	deleted := agents.AgentMachine{Name: "d", UID: "d"}
	all := sets.New[types.UID]("a", "c", "d")

	l.observe(pool, []agents.AgentMachine{waits, early, dropped, deleted}, all, t0)
	// Still waiting later: the first sight stays the start.
	l.observe(pool, []agents.AgentMachine{waits, early, dropped, deleted}, all, t0.Add(10*time.Second))
	bound := waits
	bound.AgentRef = "agent-a"
	deleted.Deleting = true
	deleted.AgentRef = "agent-d"
	l.observe(pool, []agents.AgentMachine{bound, early, deleted}, sets.New[types.UID](), t0.Add(42*time.Second))
	// dropped vanished; deleted was forgotten: neither gives a sample later.
	dropped.AgentRef = "agent-c"
	l.observe(pool, []agents.AgentMachine{bound, early, dropped}, sets.New[types.UID](), t0.Add(60*time.Second))

	var m dto.Metric
	if err := hist.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	if n, sum := m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum(); n != 1 || sum != 42 {
		t.Fatalf("%d sample(s) summing %gs, want 1 of 42s", n, sum)
	}
}
