package v1alpha1

// StandbyStatus reports a pool's warm standby.
type StandbyStatus struct {
	// Desired is spec.standby.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Standby Desired",xDescriptors="urn:alm:descriptor:text"
	Desired int32 `json:"desired"`
	// Ready counts the pool's VMs whose Agents are registered, validated, labelled, approved and
	// unbound beyond what waiting AgentMachines take (at most Desired).
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Standby Ready",xDescriptors="urn:alm:descriptor:text"
	Ready int32 `json:"ready"`
}

// ConditionStandbyReady is True while the pool keeps spec.standby ready Agents (or spec.standby is 0).
// Written once spec.standby was set.
const ConditionStandbyReady = "StandbyReady"

// Reasons for StandbyReady.
const (
	// ReasonStandbyFull: as many standby Agents are ready as spec.standby asks.
	ReasonStandbyFull = "StandbyFull"
	// ReasonStandbyDisabled: spec.standby is 0 (again).
	ReasonStandbyDisabled = "StandbyDisabled"
	// ReasonStandbyFilling: standby VMs are being created or are booting into discovery.
	ReasonStandbyFilling = "StandbyFilling"
	// ReasonStandbyLimited: limits.maxVMs or the failure domains' capacity leave no room for the
	// standby's missing VMs.
	ReasonStandbyLimited = "StandbyLimited"
)
