package v1alpha1

// Names the upstream Helm-installed operator (1.0.x/1.1.x) writes, read when a pool adopts its VMs
// (docs/migration.md). This operator never writes them, except LabelUpstreamAgentMachine on an Agent
// prepared for an AgentMachine that upstream pinned to it.
const (
	// FinalizerUpstreamPool is upstream's finalizer on pools; removed once ours is in place and adoption
	// is enabled.
	FinalizerUpstreamPool = "agent-forge.containeroo.ch/vsphere-agent-pool"
	// FinalizerUpstreamVsphereAgent is upstream's finalizer on VsphereAgents; removed once the VM is
	// adopted and ours is in place.
	FinalizerUpstreamVsphereAgent = "agent-forge.containeroo.ch/vsphere-agent"
	// LabelUpstreamPool names the pool on upstream VsphereAgents.
	LabelUpstreamPool = "agent-forge.containeroo.ch/vsphere-agent-pool"
	// LabelUpstreamCreatedFor is agent-machine (upstream created the VM) or adopted (upstream found
	// an Agent it did not create; such a VsphereAgent is reported and never acted on).
	LabelUpstreamCreatedFor = "agent-forge.containeroo.ch/created-for"
	// UpstreamCreatedForAdopted is LabelUpstreamCreatedFor of a discovered Agent.
	UpstreamCreatedForAdopted = "adopted"
	// LabelUpstreamAgentMachine is upstream's pin: an AgentMachine whose
	// spec.agentLabelSelector.matchLabels holds it only accepts an Agent with the same label value.
	LabelUpstreamAgentMachine = "agent-forge.containeroo.ch/agent-machine"
	// AnnotationUpstreamVMName is the VM name upstream recorded on a VsphereAgent (the AgentMachine name).
	AnnotationUpstreamVMName = "agent-forge.containeroo.ch/vm-name"
	// UpstreamNotesMarkerPrefix starts the VM Notes marker upstream 1.1.0+ writes, followed by the
	// VsphereAgent UID.
	UpstreamNotesMarkerPrefix = "agent-forge.containeroo.ch/vsphere-agent-uid="
	// UpstreamSourceDiscovered is status.vm.source of a VM upstream found rather than created.
	UpstreamSourceDiscovered = "DiscoveredAgent"
)

// ConditionAdopted reports, on a VsphereAgent the upstream operator made, whether its VM was taken over.
const ConditionAdopted = "Adopted"

// Reasons of ConditionAdopted.
const (
	// ReasonAdoptionSucceeded: every piece of evidence agreed; the VM carries our ownership marker.
	ReasonAdoptionSucceeded = "AdoptionSucceeded"
	// ReasonAdoptionEvidenceMismatch: a piece of evidence disagreed (named in the message); nothing
	// was touched.
	ReasonAdoptionEvidenceMismatch = "AdoptionEvidenceMismatch"
	// ReasonAdoptionDisabled: the pool's spec.adoption is Disabled; the upstream VsphereAgent is left alone.
	ReasonAdoptionDisabled = "AdoptionDisabled"
	// ReasonUpstreamDiscoveredAgent: upstream labelled it created-for=adopted (or recorded source
	// DiscoveredAgent); its VM may not be upstream's: reported, never adopted or destroyed.
	ReasonUpstreamDiscoveredAgent = "UpstreamDiscoveredAgent"
	// ReasonUpstreamNotAdopted: an upstream VsphereAgent is being deleted before its VM was adopted;
	// ownership is not proven, so no VM is destroyed and no Agent unapproved or deleted.
	ReasonUpstreamNotAdopted = "UpstreamNotAdopted"
)
