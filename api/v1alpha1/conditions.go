package v1alpha1

// Condition types of VsphereAgentPool.
const (
	ConditionReady             = "Ready"
	ConditionDemandObserved    = "DemandObserved"
	ConditionCapacitySatisfied = "CapacitySatisfied"
	ConditionInfraEnvAvailable = "InfraEnvAvailable"
	ConditionVSphereReachable  = "VSphereReachable"
	ConditionISOReady          = "ISOReady"
	ConditionRegistrationOK    = "RegistrationHealthy"
	ConditionNodePoolClaimed   = "NodePoolClaimed"
	// ConditionCRDsCurrent is False when the served VsphereAgent CRD would prune status.isoEjection
	// recovery fields (CRDs older than the controller): no ejection starts until it is updated.
	ConditionCRDsCurrent = "CRDsCurrent"
	// ConditionVCenterTLSVerified is False while the credentials Secret sets insecure: "true" (a warning:
	// the pool works, but vCenter's certificate is not checked). It does not take part in Ready.
	ConditionVCenterTLSVerified = "VCenterTLSVerified"
	// ConditionOtherManagerActive is True while another agent-forge manager (upstream's install, or an
	// older install of this operator in another namespace) holds a live leader-election Lease: this
	// manager then takes no action on the pool, its VsphereAgents, Agents or VMs. Written only once
	// another manager was seen.
	ConditionOtherManagerActive = "OtherManagerActive"
)

// Reasons for OtherManagerActive (ReasonOtherManagerRunning also on Ready, of pools and VsphereAgents).
const (
	// ReasonOtherManagerRunning: another agent-forge manager holds a live leader-election Lease; this one stands down.
	ReasonOtherManagerRunning = "OtherManagerRunning"
	// ReasonNoOtherManager: the other manager is gone; this manager acts again.
	ReasonNoOtherManager = "NoOtherManager"
	// ReasonManagerLeasesUnreadable (OtherManagerActive=Unknown, Ready=False): the other managers' Leases
	// could not be read yet, or for longer than the grace period; this manager fails closed.
	ReasonManagerLeasesUnreadable = "ManagerLeasesUnreadable"
)

// Reasons for VCenterTLSVerified.
const (
	// ReasonCertificateVerified: vCenter's certificate is verified (caBundle, thumbprint, or the system and cluster trust).
	ReasonCertificateVerified = "CertificateVerified"
	// ReasonInsecureSkipVerify: the credentials Secret sets insecure: "true"; vCenter's certificate is not checked.
	ReasonInsecureSkipVerify = "InsecureSkipVerify"
)

// Condition types of VsphereAgent.
const (
	ConditionVMCreated       = "VMCreated"
	ConditionAgentRegistered = "AgentRegistered"
	ConditionAgentPrepared   = "AgentPrepared"
	ConditionISOEjected      = "ISOEjected"
	// ConditionVMHealthy reports what vCenter shows of the VM now: it exists, runs, and where it is
	// (someone else may delete, power off, rename or move it).
	ConditionVMHealthy = "VMHealthy"
)

// Reasons for ISOEjected.
const (
	// ReasonDisabled: no ejection for the VM (spec.iso.ejectAfterInstall is false, or it is scaled down).
	ReasonDisabled = "Disabled"
	// ReasonWaitingForInstallation: the Agent is not Installed=True yet; the ISO is ejected after installation.
	ReasonWaitingForInstallation = "WaitingForInstallation"
	// ReasonEjectionInProgress: a CD-ROM holding the pool's ISO is being ejected (status.isoEjection records it).
	ReasonEjectionInProgress = "EjectionInProgress"
	// ReasonEjected: the pool's ISO was ejected from every CD-ROM of the VM.
	ReasonEjected = "Ejected"
	// ReasonNotAttached: no CD-ROM holds the pool's ISO although this operator ejected nothing (the
	// drive was emptied outside it, or by an attempt interrupted before it recorded its task).
	ReasonNotAttached = "NotAttached"
	// ReasonEjectionFailed: the ejection was refused or failed; retried with backoff.
	ReasonEjectionFailed = "EjectionFailed"
)

// Reasons for CRDsCurrent.
const (
	// ReasonCRDsCurrent: the served VsphereAgent CRD keeps every status.isoEjection field.
	ReasonCRDsCurrent = "CRDsCurrent"
	// ReasonCRDsOutdated: the served VsphereAgent CRD would prune status.isoEjection fields; no ejection starts.
	ReasonCRDsOutdated = "CRDsOutdated"
	// ReasonCRDUnreadable: the served VsphereAgent CRD could not be read; no ejection starts.
	ReasonCRDUnreadable = "CRDUnreadable"
)

// Reasons for ISOReady.
const (
	// ReasonCached: the discovery ISO is cached on the ISO datastore.
	ReasonCached = "Cached"
	// ReasonDownloading: the discovery ISO is being streamed to the ISO datastore; VMs wait.
	ReasonDownloading = "Downloading"
	// ReasonDownloadFailed: downloading the discovery ISO failed.
	ReasonDownloadFailed = "DownloadFailed"
	// ReasonNotAnISO: the InfraEnv URL answered with something that is not an ISO image.
	ReasonNotAnISO = "NotAnISO"
	// ReasonUploadFailed: uploading the discovery ISO to the ISO datastore failed.
	ReasonUploadFailed = "UploadFailed"
	// ReasonInfraEnvNotReady: the InfraEnv has no status.isoDownloadURL yet.
	ReasonInfraEnvNotReady = "InfraEnvNotReady"
	// ReasonISOTooLarge: the image is larger than spec.iso.maxSize (announced or received); nothing of
	// it is kept.
	ReasonISOTooLarge = "ISOTooLarge"
	// ReasonCABundleNotFound: spec.iso.caBundleRef names a ConfigMap or Secret, or a key of it, that
	// does not exist; no download is attempted until it does.
	ReasonCABundleNotFound = "CABundleNotFound"
)

// Well-known labels and annotations.
const (
	// LabelPool marks Agents and VsphereAgents with the pool that owns them.
	LabelPool = "agent-forge.containeroo.ch/pool"
	// LabelVsphereAgent marks an Agent with the VsphereAgent (VM) that registered it.
	LabelVsphereAgent = "agent-forge.containeroo.ch/vsphereagent"
	// LabelNodePoolRole is the HyperShift role label set on prepared Agents.
	LabelNodePoolRole = "hypershift.openshift.io/nodepool-role"
	// AnnotationForceISORefresh forces an unconditional ISO refresh when its value changes.
	AnnotationForceISORefresh = "agent-forge.containeroo.ch/force-iso-refresh"
	// FinalizerVsphereAgent guards VM cleanup.
	FinalizerVsphereAgent = "agent-forge.containeroo.ch/vm-cleanup"
	// FinalizerPool guards pool cleanup.
	FinalizerPool = "agent-forge.containeroo.ch/pool-cleanup"
)
