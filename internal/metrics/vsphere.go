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

	// VCenterCircuitOpen is 1 while a vCenter's circuit breaker is open or half-open (calls fail fast
	// after repeated timeouts or connection failures) and 0 while it is closed. The label is the
	// endpoint's host:port, never user info, path or query.
	VCenterCircuitOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agent_forge_vcenter_circuit_open",
		Help: "1 while the circuit breaker of a vCenter (host:port) is open: its calls fail fast after repeated timeouts.",
	}, []string{"vcenter"})
)
