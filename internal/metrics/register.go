package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// All returns every metric of the operator.
func All() []prometheus.Collector {
	return []prometheus.Collector{
		PoolCapacity, PoolWaiting, PoolDemandUnobserved, PoolHeadroom, VMsRequested, VMResources, ReconcileDuration, PoolPhaseDuration, ExternalCRDsMissing,
		VsphereVMOperations, VsphereCallDuration, VCenterCircuitOpen,
		ISOOperations, ISOBytesTransferred, CRDSchemaOutdated, OtherManagerActive, ManagerLeasesUnreadable,
		PoolStandbyDesired, PoolStandbyReady, DemandToBound, PoolRegistrationBreakerTrips, PoolVCenterTLSUnverified,
		PoolDriftedWorkers,
	}
}

// Register adds every metric to r. Registering them twice with one registry (two managers in one
// test process) is not an error.
func Register(r prometheus.Registerer) error {
	for _, c := range All() {
		if err := r.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return err
			}
		}
	}
	return nil
}
