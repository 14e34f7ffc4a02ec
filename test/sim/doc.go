// Package sim holds loopback stand-ins for the outside world used by tests, the demo and the
// benchmarks: an HTTP server for InfraEnv discovery ISOs (this package) and the cluster-world
// driver (package world).
package sim
