package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	// PoolRegistrationBreakerTrips is how many times in a row a pool's registration breaker tripped while
	// it holds or probes VM creation (RegistrationOK=False); 0 while it is closed.
	PoolRegistrationBreakerTrips = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_registration_breaker_trips",
		Help: "Trips in a row of the pool's registration breaker while it holds or probes VM creation (0: closed, VMs are created as demand asks).",
	}, []string{LabelPoolNamespace, "pool"})
	// PoolVCenterTLSUnverified is 1 while a pool's credentials Secret turns vCenter certificate
	// verification off (insecure: "true").
	PoolVCenterTLSUnverified = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_pool_vcenter_tls_unverified",
		Help: "1 while the pool's credentials Secret sets insecure: \"true\" (vCenter's certificate is not verified).",
	}, []string{LabelPoolNamespace, "pool"})
)
