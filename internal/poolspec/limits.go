package poolspec

import afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

// DefaultMaxConcurrentProvisioning caps the VMs in flight (created, not registered yet) of a pool whose
// spec.limits.maxConcurrentProvisioning is unset: a burst of demand, or a broken discovery image, never
// has more VMs on their way than this before the registration breaker can judge them. A default in
// code, not in the CRD: stored objects stay as they are, and a value set in the spec always wins.
const DefaultMaxConcurrentProvisioning int32 = 10

// Limits returns spec.limits.maxVMs (nil: no cap; it has no default, a pool's size is the NodePool's)
// and maxConcurrentProvisioning (DefaultMaxConcurrentProvisioning when unset).
func Limits(pool *afv1.VsphereAgentPool) (maxVMs, maxConcurrent *int32) {
	c := DefaultMaxConcurrentProvisioning
	maxConcurrent = &c
	if l := pool.Spec.Limits; l != nil {
		maxVMs = l.MaxVMs
		if l.MaxConcurrentProvisioning != nil {
			maxConcurrent = l.MaxConcurrentProvisioning
		}
	}
	return maxVMs, maxConcurrent
}
