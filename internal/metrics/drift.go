package metrics

import "github.com/prometheus/client_golang/prometheus"

// PoolDriftedWorkers is status.templateDrift.boundWorkers: the pool's bound workers made from an earlier
// template (reported, never replaced by the operator).
var PoolDriftedWorkers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "agent_forge_pool_template_drifted_workers",
	Help: "The pool's bound workers made from an earlier template than the pool's current one (roll the NodePool to replace them).",
}, []string{LabelPoolNamespace, "pool"})
