package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

var (
	// VsphereVMOperations counts VM-level operations (create, destroy, find, eject, answer, upload, ...)
	// of the vSphere layer by result (success, or the error class).
	VsphereVMOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_forge_vsphere_vm_operations_total",
		Help: "vSphere operations of the operator by operation and result (success or error class).",
	}, []string{"operation", "result"})

	// VsphereCallDuration is the latency of each vSphere API call, by SOAP method (and "DatastoreUpload" for
	// HTTP file transfers).
	VsphereCallDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "agent_forge_vsphere_call_duration_seconds",
		Help:    "Latency of vSphere API calls by method.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"method"})
)
