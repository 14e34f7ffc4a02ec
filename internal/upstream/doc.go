// Package upstream recognises the VsphereAgents the upstream Helm-installed operator made (its
// finalizer, labels or VM-name annotation; docs/migration.md) and whether their VM was adopted. It
// exists because every controller that could create, destroy, release, unapprove or delete for a
// VsphereAgent must ask the same question first, and must get the same answer.
package upstream
