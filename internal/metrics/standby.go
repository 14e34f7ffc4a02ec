package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// PoolStandbyDesired is a pool's spec.standby.
	PoolStandbyDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_standby_desired",
		Help: "VMs the pool keeps in warm standby (spec.standby).",
	}, []string{LabelPoolNamespace, "pool"})
	// PoolStandbyReady counts a pool's ready standby Agents (status.standby.ready).
	PoolStandbyReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_standby_ready",
		Help: "The pool's VMs whose Agents are registered, validated, labelled, approved and unbound beyond what waiting AgentMachines take.",
	}, []string{LabelPoolNamespace, "pool"})
	// DemandToBound is the time from an AgentMachine first observed waiting with NoSuitableAgents to its
	// Agent bound (status.agentRef set): what a scale-up costs the pending pod.
	DemandToBound = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agent_forge_demand_to_bound_seconds",
		Help:    "Time from an AgentMachine first observed waiting with NoSuitableAgents to its Agent bound.",
		Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 180, 300, 600, 1200, 1800, 3600},
	}, []string{LabelPoolNamespace, "pool"})
)
