package v1alpha1

// VSphereReachable reasons: the vCenter credentials, the connection, and the classes of vSphere errors
// (internal/vsphere's ErrorClass values are these reasons).
const (
	// ReasonConnected: logged in to vCenter.
	ReasonConnected = "Connected"
	// ReasonCredentialsNotFound: the credentials Secret does not exist.
	ReasonCredentialsNotFound = "CredentialsNotFound"
	// ReasonCredentialsInvalid: the credentials Secret lacks a key or holds an unusable value.
	ReasonCredentialsInvalid = "CredentialsInvalid"
	// ReasonCrossNamespaceSecretRefused: the credentials Secret is in a namespace the operator may not read from.
	ReasonCrossNamespaceSecretRefused = "CrossNamespaceSecretRefused"
	// ReasonVCenterTimeout: vCenter did not answer within the call's deadline.
	ReasonVCenterTimeout = "VCenterTimeout"
	// ReasonVCenterCircuitOpen: the vCenter's circuit breaker is open after repeated failures.
	ReasonVCenterCircuitOpen = "VCenterCircuitOpen"
	// ReasonVCenterProxyError: the HTTPS proxy refused or failed the tunnel to vCenter.
	ReasonVCenterProxyError = "VCenterProxyError"
	// ReasonVCenterCertificateRejected: vCenter's certificate was refused (untrusted, wrong name, expired, not pinned).
	ReasonVCenterCertificateRejected = "VCenterCertificateRejected"
	// ReasonNotFound: a vSphere object does not exist.
	ReasonNotFound = "NotFound"
	// ReasonAuthenticationFailed: the vCenter login failed or the session is no longer valid.
	ReasonAuthenticationFailed = "AuthenticationFailed"
	// ReasonPermissionDenied: the vCenter user lacks a privilege.
	ReasonPermissionDenied = "PermissionDenied"
	// ReasonTransient: network trouble, a timeout or a busy object; retried with backoff.
	ReasonTransient = "Transient"
	// ReasonFault: vCenter refused the operation with a fault.
	ReasonFault = "Fault"
	// ReasonRefused: a guard refused the vSphere operation (media changed, another question pending, ...).
	ReasonRefused = "Refused"
	// ReasonInvalidConfiguration: the vSphere request itself is invalid (unknown datacenter, network, ...).
	ReasonInvalidConfiguration = "InvalidConfiguration"
)
