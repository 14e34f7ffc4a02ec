package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RegistrationBreakerStatus is the memory of the pool's registration breaker. It trips when VMs keep
// failing to register (or their creation is refused for good) and holds VM creation for a backoff
// that doubles with each trip in a row; when the hold ends, one VM at a time probes the image, and a
// probe that fails trips it again. It lives in the status, not in the Failed VsphereAgents, so neither
// their expiry nor a restart resets it: only an Agent that registers, or a change of the pool's spec
// (generation) or discovery image, does.
type RegistrationBreakerStatus struct {
	// Trips counts the trips in a row, without a registration in between.
	Trips int32 `json:"trips"`
	// HeldUntil is when creation resumes, one VM at a time (unset while it never tripped).
	// +optional
	HeldUntil *metav1.Time `json:"heldUntil,omitempty"`
	// Since is the last trip or reset: VM failures before it are not counted again.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// ObservedGeneration is the pool's generation at the last trip: a spec change resets the breaker.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Image is the SHA-256 of the discovery image at the last trip: a new image resets the breaker.
	// +optional
	Image string `json:"image,omitempty"`
}
