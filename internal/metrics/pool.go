package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// LabelPoolNamespace is the label carrying a pool's namespace on the per-pool metrics. It is deliberately not
// "namespace": Prometheus attaches the scraped Service's namespace (the operator's) as "namespace", and
// would rename ours to "exported_namespace" unless the scrape honoured target labels. honorLabels would let
// the operator overwrite the namespace that OpenShift monitoring uses for tenancy, and user-workload monitoring
// enforces it anyway, so a distinct name is the one that means the same thing under every Prometheus.
const LabelPoolNamespace = "pool_namespace"

var (
	// PoolCapacity counts a pool's capacity by state: waiting (AgentMachines), inflight, available,
	// bound, failed (VMs).
	PoolCapacity = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_capacity",
		Help: "Capacity of a VsphereAgentPool by state (waiting AgentMachines; inflight, available, bound, failed VMs).",
	}, []string{LabelPoolNamespace, "pool", "state"})
	// PoolWaiting is the demand of a pool.
	PoolWaiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_waiting_agentmachines",
		Help: "AgentMachines of the pool's NodePool waiting with NoSuitableAgents.",
	}, []string{LabelPoolNamespace, "pool"})
	// PoolDemandUnobserved is 1 while a pool cannot see its NodePool's demand (DemandObserved=False), by the
	// condition's reason: its waiting count then says nothing, so the stalled-demand alert reads this too.
	PoolDemandUnobserved = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_demand_unobserved",
		Help: "1 while the pool cannot see its NodePool's AgentMachines (DemandObserved=False), by reason.",
	}, []string{LabelPoolNamespace, "pool", "reason"})
	// VMsRequested counts the VsphereAgents pools created (action create) or released (action release).
	VMsRequested = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_forge_pool_vm_requests_total",
		Help: "VsphereAgents a pool created (create) or released (release).",
	}, []string{LabelPoolNamespace, "pool", "action"})
	// VMResources are the sizes of each VM (cpus, memory_bytes, disk_bytes).
	VMResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_vm_resources",
		Help: "Configured resources of each pool VM by resource (cpus, memory_bytes, disk_bytes).",
	}, []string{LabelPoolNamespace, "pool", "vm", "resource"})
	// PoolHeadroom is how many more VMs of a pool's template fit in each failure domain ("" for a pool
	// without failure domains), as last measured from vCenter's capacity (see vsphere.HeadroomFor).
	PoolHeadroom = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_headroom_vms",
		Help: "VMs of the pool's template that still fit in each failure domain (CPU, memory, disk with the safety margin).",
	}, []string{LabelPoolNamespace, "pool", "failure_domain"})
	// ReconcileDuration is the latency of reconciles per controller.
	ReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agent_forge_reconcile_duration_seconds",
		Help:    "Duration of reconciles by controller and result.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"controller", "result"})
	// PoolPhaseDuration is the time a pool pass spends in each of its phases (and in its status write):
	// which step holds the pool controller's workers when its queue grows.
	PoolPhaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agent_forge_pool_phase_duration_seconds",
		Help:    "Duration of each phase of a pool pass (claim, refs, agents, demand, infraenv, vcenter, preflight, iso, domains, modules, leases, plan, prepare_leases, status).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"phase"})
	// ExternalCRDsMissing is the number of external kinds the API server does not serve.
	ExternalCRDsMissing = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agent_forge_external_crds_missing",
		Help: "External kinds (Agent, InfraEnv, AgentMachine, Machine, NodePool, HostedCluster) not served; controllers wait for them.",
	})
)
