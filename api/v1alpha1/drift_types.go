package v1alpha1

// TemplateRecord is a VM's template: what of its pool's spec shaped it (template, hardware profile,
// virtual hardware settings, network), flattened to field -> value, and its hash. A VsphereAgent records
// it when its VM is created; the pool compares it with its current template to report drift.
type TemplateRecord struct {
	// Hash names the shape (16 hex digits of its SHA-256).
	// +kubebuilder:validation:MaxLength=64
	Hash string `json:"hash"`
	// Shape is the template's fields and values, e.g. memoryMiB: "16384", hardware.dataDisks[0].sizeGiB: "100".
	// +optional
	// +kubebuilder:validation:MaxProperties=128
	Shape map[string]string `json:"shape,omitempty"`
}

// TemplateDriftStatus reports the pool's VMs made from an earlier template. Bound workers are never
// changed or replaced by the operator (roll the NodePool to replace them; docs/drift.md); unbound VMs
// of an earlier template are replaced.
type TemplateDriftStatus struct {
	// Template is the pool's current template (for its first failure domain); the next template change
	// is reported against it (Event TemplateChanged).
	// +optional
	Template *TemplateRecord `json:"template,omitempty"`
	// BoundWorkers counts the bound workers (VMs whose Agent is reserved or bound, or that back a
	// Machine) made from an earlier template.
	// +optional
	BoundWorkers int32 `json:"boundWorkers,omitempty"`
	// Unrecorded counts the bound workers whose template is not known (made before VMs recorded it, or
	// adopted): they may or may not differ.
	// +optional
	Unrecorded int32 `json:"unrecorded,omitempty"`
	// Diff says in what the drifted bound workers differ from the current template, e.g.
	// "memoryMiB 16384 -> 32768" (the most common difference first, at most a few).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Diff string `json:"diff,omitempty"`
	// Workers names the drifted bound workers' VsphereAgents (at most 20, sorted).
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Workers []string `json:"workers,omitempty"`
}
