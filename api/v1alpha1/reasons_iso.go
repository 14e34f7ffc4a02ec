package v1alpha1

// ISOReady reasons for failures of trust and proxy, and the ISO cache's and the ISO ejection's Events.
const (
	// ReasonCertificateUntrusted: the image host's certificate is signed by no trusted authority.
	ReasonCertificateUntrusted = "CertificateUntrusted"
	// ReasonCertificateNameMismatch: the image host's certificate names another host than the one dialled.
	ReasonCertificateNameMismatch = "CertificateNameMismatch"
	// ReasonPlainHTTPRefused: the ISO URL or a redirect is not https and spec.iso.allowPlainHTTP is not set.
	ReasonPlainHTTPRefused = "PlainHTTPRefused"
	// ReasonInvalidCABundle: the trusted CA bundle file or the pool's CA holds no parsable certificate.
	ReasonInvalidCABundle = "InvalidCABundle"
	// ReasonProxyRefused: the proxy refused the CONNECT (or answered a plain-HTTP request with 407).
	ReasonProxyRefused = "ProxyRefused"
	// ReasonProxyUnreachable: the proxy named by HTTPS_PROXY/HTTP_PROXY could not be connected to.
	ReasonProxyUnreachable = "ProxyUnreachable"
)

// Events of the pool's discovery ISO cache.
const (
	// ReasonISOUploaded: a new discovery ISO was downloaded and uploaded to the datastore.
	ReasonISOUploaded = "ISOUploaded"
	// ReasonISOReused: the cached ISO is still current and was reused.
	ReasonISOReused = "ISOReused"
	// ReasonISOPruned: an old ISO version no VM uses was deleted from the datastore.
	ReasonISOPruned = "ISOPruned"
	// ReasonISOPruneDeferred: an old ISO version is still attached to a VM; its prune waits.
	ReasonISOPruneDeferred = "ISOPruneDeferred"
	// ReasonISOPruneFailed: deleting an old ISO version failed.
	ReasonISOPruneFailed = "ISOPruneFailed"
	// ReasonISORefreshFailed: refreshing the discovery ISO failed.
	ReasonISORefreshFailed = "ISORefreshFailed"
	// ReasonISOTempCleanedUp: a temporary upload left by an interrupted refresh was removed.
	ReasonISOTempCleanedUp = "ISOTempCleanedUp"
)

// Events of the discovery ISO's ejection after installation.
const (
	// ReasonISOEjected: the discovery ISO was ejected from the VM (batched Event).
	ReasonISOEjected = "ISOEjected"
	// ReasonISONotAttached: the VM has no discovery ISO attached; nothing to eject.
	ReasonISONotAttached = "ISONotAttached"
	// ReasonISOEjectionFailed: an ejection step failed.
	ReasonISOEjectionFailed = "ISOEjectionFailed"
	// ReasonISOEjectionClosed: the ejection was closed unfinished (the VM or its VsphereAgent is gone).
	ReasonISOEjectionClosed = "ISOEjectionClosed"
	// ReasonUnrelatedMediaAttached: the VM keeps media the pool does not own attached.
	ReasonUnrelatedMediaAttached = "UnrelatedMediaAttached"
	// ReasonCDROMLockQuestion: the guest locked the CD-ROM door; the question is recorded before answering.
	ReasonCDROMLockQuestion = "CDROMLockQuestion"
	// ReasonCDROMLockAnswered: the recorded CD-ROM lock question was answered with Yes.
	ReasonCDROMLockAnswered = "CDROMLockAnswered"
	// ReasonEjectionResumed: a reconfigure task of an earlier attempt is tracked instead of starting another.
	ReasonEjectionResumed = "EjectionResumed"
)
