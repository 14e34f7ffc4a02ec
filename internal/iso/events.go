package iso

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Limits of the status the cache writes.
const (
	maxLastErrorLength     = 1024
	shortDigestLength      = 12
	lastErrorTimeFormatUTC = time.RFC3339
)

// Kubernetes event types (corev1.EventTypeNormal/Warning; spelled out to keep k8s.io/api out of the
// package's dependencies).
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event actions (events.k8s.io/v1 `action`) of the ISO cache's Events: a refresh (download, upload,
// reuse, cleanup of temporary uploads) or a prune of old versions.
const (
	ActionRefreshISO = "RefreshISO"
	ActionPruneISO   = "PruneISO"
)

// Event is one Kubernetes event for the pool. Messages are already free of URL tokens.
type Event struct {
	Type    string // EventTypeNormal or EventTypeWarning
	Reason  string
	Action  string // ActionRefreshISO or ActionPruneISO
	Message string
}

// EventRecorder is client-go's events.k8s.io EventRecorder (k8s.io/client-go/tools/events), which the
// product's redacting recorder (internal/events.Recorder) implements.
type EventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

func normal(reason, format string, args ...any) Event {
	return Event{Type: EventTypeNormal, Reason: reason, Action: actionOf(reason), Message: fmt.Sprintf(format, args...)}
}

func warning(reason, format string, args ...any) Event {
	return Event{Type: EventTypeWarning, Reason: reason, Action: actionOf(reason), Message: fmt.Sprintf(format, args...)}
}

func actionOf(reason string) string {
	switch reason {
	case afv1.ReasonISOPruned, afv1.ReasonISOPruneDeferred, afv1.ReasonISOPruneFailed:
		return ActionPruneISO
	}
	return ActionRefreshISO
}

func short(digest string) string {
	if len(digest) > shortDigestLength {
		return digest[:shortDigestLength]
	}
	return digest
}

// failureReasons are the ISOReady reasons that mean the last refresh failed.
var failureReasons = map[string]bool{
	afv1.ReasonDownloadFailed:          true,
	afv1.ReasonNotAnISO:                true,
	afv1.ReasonUploadFailed:            true,
	afv1.ReasonCertificateUntrusted:    true,
	afv1.ReasonCertificateNameMismatch: true,
	afv1.ReasonPlainHTTPRefused:        true,
	afv1.ReasonInvalidCABundle:         true,
	afv1.ReasonProxyRefused:            true,
	afv1.ReasonProxyUnreachable:        true,
	afv1.ReasonISOTooLarge:             true,
}

// IsFailureReason reports whether an ISOReady reason records a failed refresh.
func IsFailureReason(reason string) bool { return failureReasons[reason] }

// ConditionWhileRefreshing is the ISOReady condition to show while a refresh runs: still True/Cached
// when an ISO is cached (new VMs use it meanwhile), else False/Downloading.
func ConditionWhileRefreshing(st *afv1.ISOStatus) metav1.Condition {
	if st != nil && st.Path != "" {
		return metav1.Condition{Type: afv1.ConditionISOReady, Status: metav1.ConditionTrue, Reason: afv1.ReasonCached,
			Message: fmt.Sprintf("discovery ISO %s cached at %s; revalidating", short(st.SHA256), st.Path)}
	}
	return metav1.Condition{Type: afv1.ConditionISOReady, Status: metav1.ConditionFalse, Reason: afv1.ReasonDownloading,
		Message: "downloading the discovery ISO"}
}

// ConditionInfraEnvNotReady is the ISOReady condition while the InfraEnv has no isoDownloadURL. A
// previously cached ISO stays usable.
func ConditionInfraEnvNotReady(st *afv1.ISOStatus) metav1.Condition {
	msg := "the InfraEnv has no isoDownloadURL yet"
	if st != nil && st.Path != "" {
		msg += fmt.Sprintf("; new VMs keep using the cached ISO %s", st.Path)
	}
	return metav1.Condition{Type: afv1.ConditionISOReady, Status: metav1.ConditionFalse, Reason: afv1.ReasonInfraEnvNotReady, Message: msg}
}
