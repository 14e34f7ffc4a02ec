package v1alpha1

// ConditionHardwareSufficient says whether the pool's VMs can pass assisted-service's hardware
// validations. Before any host has reported, it compares spec.template with assisted-service's
// documented default minimums for the role: below them it is False/BelowHubDefaultMinimum, a warning
// only (a hub's requirements are configurable, HW_VALIDATOR_REQUIREMENTS), and VMs are still created.
// Once a host of the pool reports a hardware validation failing, it is False/HostValidationFailing
// with the validation's message, and no further VM of that template shape is created until the
// template changes.
const ConditionHardwareSufficient = "HardwareSufficient"

// Reasons for HardwareSufficient.
const (
	// ReasonMeetsHubDefaults: the template meets assisted-service's default minimums for the role and no
	// host of the pool reports a hardware validation failing.
	ReasonMeetsHubDefaults = "MeetsHubDefaults"
	// ReasonBelowHubDefaultMinimum: the template is below assisted-service's default minimum for the
	// role (CPU cores, memory or disk); a warning, VMs are still created.
	ReasonBelowHubDefaultMinimum = "BelowHubDefaultMinimum"
	// ReasonHostValidationFailing: a host of the pool made from the current template shape reports a
	// hardware validation failing; no further VM of that shape is created.
	ReasonHostValidationFailing = "HostValidationFailing"
)

// ConditionAgentValidated is a VsphereAgent's view of assisted-service's validations of its host
// (the Agent's Validated condition and status.validationsInfo).
const ConditionAgentValidated = "AgentValidated"

// Reasons for AgentValidated, and the VM phase reason of a host replaced for its validations.
const (
	// ReasonHostValidationsPassing: the Agent reports Validated=True.
	ReasonHostValidationsPassing = "HostValidationsPassing"
	// ReasonHostValidationsPending: the Agent has not reported a verdict yet (no validation failing).
	ReasonHostValidationsPending = "HostValidationsPending"
	// ReasonHostValidationsFailing: the Agent reports validations failing; the message names each (id,
	// category and the hub's message). A Warning Event says the same.
	ReasonHostValidationsFailing = "HostValidationsFailing"
	// ReasonHostValidationFailed: the VM is Failed for its host's validations: at once for a hardware
	// validation (every VM of the template would fail it), else after failing for the pool's
	// registrationTimeout. Not supply; it counts towards the registration breaker, which bounds how
	// many such VMs the pool replaces.
	ReasonHostValidationFailed = "HostValidationFailed"
)
