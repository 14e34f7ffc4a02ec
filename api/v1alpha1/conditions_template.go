package v1alpha1

// ConditionTemplateCurrent (VsphereAgentPool) says whether the pool's bound workers were made from its
// current template (status.templateDrift). Drift is reported, never acted on: a bound worker backs a
// Machine and is replaced only when CAPI replaces the Machine (roll the NodePool; docs/drift.md). It does
// not make the pool unready.
const ConditionTemplateCurrent = "TemplateCurrent"

// Reasons for TemplateCurrent, and the Event and release reasons of a template change.
const (
	// ReasonTemplateCurrent: every bound worker whose template is recorded was made from the current one.
	ReasonTemplateCurrent = "TemplateCurrent"
	// ReasonTemplateDrift: bound workers were made from an earlier template; the message says how many and
	// in what they differ.
	ReasonTemplateDrift = "TemplateDrift"
	// ReasonTemplateChanged (Event): the pool's template changed; the message says in what.
	ReasonTemplateChanged = "TemplateChanged"
	// ReasonOutdatedTemplate (release): a VM whose Agent never bound was made from an earlier template; it
	// is replaced so that no worker of the old shape is bound later.
	ReasonOutdatedTemplate = "OutdatedTemplate"
)
