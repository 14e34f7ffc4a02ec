package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// ISO operations counted by ISOOperations.
const (
	ISOOpDownload = "download"
	ISOOpUpload   = "upload"
	ISOOpReuse    = "reuse"
	ISOOpPrune    = "prune"
	ISOOpEject    = "eject"
	ISOOpAnswer   = "answer"
)

// Results of an ISO operation.
const (
	ResultSuccess     = "success"
	ResultFailure     = "failure"
	ResultNotModified = "not_modified" // a conditional download answered 304 or the digest was unchanged
	ResultDeferred    = "deferred"     // a prune postponed because a VM still has the ISO attached
)

// Directions of ISO bytes transferred.
const (
	DirectionDownload = "download"
	DirectionUpload   = "upload"
)

var (
	// ISOOperations counts ISO cache and ejection operations by operation and result.
	ISOOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_forge_iso_operations_total",
		Help: "Discovery ISO operations (download, upload, reuse, prune, eject, answer) by result.",
	}, []string{"operation", "result"})

	// ISOBytesTransferred counts ISO bytes downloaded from the image service and uploaded to datastores.
	ISOBytesTransferred = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agent_forge_iso_bytes_transferred_total",
		Help: "Discovery ISO bytes transferred, by direction (download, upload).",
	}, []string{"direction"})
)

// ObserveISOOperation counts one ISO operation.
func ObserveISOOperation(operation, result string) {
	ISOOperations.WithLabelValues(operation, result).Inc()
}

// AddISOBytes adds n transferred bytes in a direction.
func AddISOBytes(direction string, n int64) {
	if n > 0 {
		ISOBytesTransferred.WithLabelValues(direction).Add(float64(n))
	}
}
