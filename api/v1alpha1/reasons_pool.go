package v1alpha1

// Condition, planned-action and Event reasons of a VsphereAgentPool: demand, capacity, the plan and the
// pool's own lifecycle. Every reason the operator shows is a constant of this package named after its
// value (docs/troubleshooting.md explains each; controllers/troubleshooting_reasons_test.go checks it).
const (
	// ReasonReady: the pool (or VsphereAgent) is ready.
	ReasonReady = "Ready"
	// ReasonPaused: spec.paused is true; nothing is created or removed (condition and planned Wait).
	ReasonPaused = "Paused"
	// ReasonClaimed: this pool serves its NodePool.
	ReasonClaimed = "Claimed"
	// ReasonNodePoolAlreadyClaimed: another pool already serves this NodePool (condition and Event).
	ReasonNodePoolAlreadyClaimed = "NodePoolAlreadyClaimed"
	// ReasonDemandObserved: the pool reads its NodePool's AgentMachines.
	ReasonDemandObserved = "DemandObserved"
	// ReasonISOURLAvailable: the InfraEnv publishes a discovery ISO URL.
	ReasonISOURLAvailable = "ISOURLAvailable"
	// ReasonInfraEnvNotFound: spec.infraEnvRef does not exist (condition and Warning Event).
	ReasonInfraEnvNotFound = "InfraEnvNotFound"
	// ReasonInfraEnvFound: the missing InfraEnv exists again (Normal Event).
	ReasonInfraEnvFound = "InfraEnvFound"
	// ReasonProvisioningInProgress: VMs for the waiting AgentMachines are on their way.
	ReasonProvisioningInProgress = "ProvisioningInProgress"
	// ReasonCapacitySatisfied: no AgentMachine waits for an Agent.
	ReasonCapacitySatisfied = "CapacitySatisfied"
	// ReasonDeficit: more VMs are needed than exist or are on their way (CapacitySatisfied=False).
	ReasonDeficit = "Deficit"
	// ReasonNoSuitableAgents: AgentMachines wait for an Agent; the plan creates VMs for them.
	ReasonNoSuitableAgents = "NoSuitableAgents"
	// ReasonMaxVMsReached: limits.maxVMs leaves no room for another VM.
	ReasonMaxVMsReached = "MaxVMsReached"
	// ReasonMaxConcurrentProvisioningReached: limits.maxConcurrentProvisioning VMs are already in flight.
	ReasonMaxConcurrentProvisioningReached = "MaxConcurrentProvisioningReached"
	// ReasonSurplus: a VM is released because more exist than demand and standby need.
	ReasonSurplus = "Surplus"
	// ReasonReleased: a VM is released because its Agent was unbound after a scale-down.
	ReasonReleased = "Released"
	// ReasonRetainPolicy: cleanupPolicy Retain keeps surplus VMs.
	ReasonRetainPolicy = "RetainPolicy"
	// ReasonWaitingForVSphere: no vCenter session yet; creation waits (pool plan and VsphereAgent).
	ReasonWaitingForVSphere = "WaitingForVSphere"
	// ReasonWaitingForISO: the pool's discovery ISO is not cached yet; creation waits.
	ReasonWaitingForISO = "WaitingForISO"
	// ReasonFailureDomainNotFound: a VM's failure domain was removed from the pool before its VM was created.
	ReasonFailureDomainNotFound = "FailureDomainNotFound"
	// ReasonNoFailureDomainAvailable: VMs are needed but the failure domains take fewer now.
	ReasonNoFailureDomainAvailable = "NoFailureDomainAvailable"
	// ReasonRegistrationHealthy: the pool's VMs register their Agents (RegistrationOK=True).
	ReasonRegistrationHealthy = "RegistrationHealthy"
	// ReasonRegistrationFailing: the registration breaker is open and blocks creation (condition and Event).
	ReasonRegistrationFailing = "RegistrationFailing"
	// ReasonRegistrationProbing: the breaker lets one probe VM test the image.
	ReasonRegistrationProbing = "RegistrationProbing"
	// ReasonCreateFailed: the pool could not create a VsphereAgent (Warning Event).
	ReasonCreateFailed = "CreateFailed"
	// ReasonVMReleased: the pool releases a VM (Normal Event naming why).
	ReasonVMReleased = "VMReleased"
	// ReasonSurplusKept: a surplus VM is kept because its Agent is bound or reserved (Normal Event).
	ReasonSurplusKept = "SurplusKept"
	// ReasonDeletionPaused: a paused pool is being deleted; its VMs wait (Warning Event).
	ReasonDeletionPaused = "DeletionPaused"
	// ReasonPoolDeleted: the deleted pool's cleanupPolicy was applied (Normal Event).
	ReasonPoolDeleted = "PoolDeleted"
	// ReasonPoolNotFound: a VsphereAgent's pool does not exist.
	ReasonPoolNotFound = "PoolNotFound"
)

// Reasons of VMs the pool finds in vCenter that it does not account for.
const (
	// ReasonOrphanFound: a VM carries the pool's marker but has no VsphereAgent; Retain keeps it (Warning Event).
	ReasonOrphanFound = "OrphanFound"
	// ReasonOrphanKept: an orphan VM's Agent backs a Machine, so it is kept (Normal Event).
	ReasonOrphanKept = "OrphanKept"
	// ReasonOrphanDestroyed: an orphan VM without a VsphereAgent was destroyed (Normal Event).
	ReasonOrphanDestroyed = "OrphanDestroyed"
	// ReasonOrphanCleanupFailed: destroying an orphan VM failed (Warning Event).
	ReasonOrphanCleanupFailed = "OrphanCleanupFailed"
	// ReasonOrphanAgentDeleted: an Agent that registered after its VM was destroyed was deleted (Normal Event).
	ReasonOrphanAgentDeleted = "OrphanAgentDeleted"
	// ReasonCopyFound: a VM carries the pool's marker but is a copy (clone, template, restore, replica):
	// reported once, never destroyed or counted (batched Event).
	ReasonCopyFound = "CopyFound"
)
