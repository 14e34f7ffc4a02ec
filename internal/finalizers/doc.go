// Package finalizers adds and removes the operator's finalizers with a merge patch of
// metadata.finalizers alone, under an optimistic lock. It exists because a whole-object Update would
// write a user's spec back as the typed client serializes it (a new generation and GitOps drift on a
// manifest nobody changed), and every controller that holds a finalizer must avoid that alike.
package finalizers
