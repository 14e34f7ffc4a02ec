package finalizers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Patch adds (present) or removes finalizer on obj with a merge patch that carries only
// metadata.finalizers and the resourceVersion, and reports whether it wrote. A whole-object Update of an
// object a user owns writes the spec back as the typed client serializes it ("1h" as "1h0m0s"): a new
// metadata.generation and GitOps drift on a manifest nobody changed. The resourceVersion is an optimistic
// lock: the patch replaces the whole list, so a finalizer another controller added meanwhile must make it
// fail (a conflict, retried with a fresh read) rather than be dropped. obj is updated from the response.
func Patch(ctx context.Context, c client.Client, obj client.Object, finalizer string, present bool) (bool, error) {
	base := obj.DeepCopyObject().(client.Object)
	changed := false
	if present {
		changed = controllerutil.AddFinalizer(obj, finalizer)
	} else {
		changed = controllerutil.RemoveFinalizer(obj, finalizer)
	}
	if !changed {
		return false, nil
	}
	return true, c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}
