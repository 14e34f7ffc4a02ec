package upstream

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
)

// IsUpstream reports whether the upstream Helm-installed operator made va: it carries upstream's
// finalizer, labels or VM-name annotation (docs/migration.md).
func IsUpstream(va *afv1.VsphereAgent) bool {
	_, createdFor := va.Labels[afv1.LabelUpstreamCreatedFor]
	_, upstreamPool := va.Labels[afv1.LabelUpstreamPool]
	_, vmName := va.Annotations[afv1.AnnotationUpstreamVMName]
	hasFinalizer := false
	for _, f := range va.Finalizers {
		hasFinalizer = hasFinalizer || f == afv1.FinalizerUpstreamVsphereAgent
	}
	return createdFor || upstreamPool || vmName || hasFinalizer
}

// Adopted reports whether va's VM was adopted (condition Adopted=True): from then on it is ours.
func Adopted(va *afv1.VsphereAgent) bool {
	c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAdopted)
	return c != nil && c.Status == "True" && va.Status.VM.InstanceUUID == string(va.UID)
}

// Pending reports an upstream VsphereAgent whose VM is not (yet) adopted: its ownership is not
// proven, so nothing may be created, destroyed, released, unapproved or deleted for it.
func Pending(va *afv1.VsphereAgent) bool { return IsUpstream(va) && !Adopted(va) }
