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
