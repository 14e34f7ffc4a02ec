// Package controllers holds the thin reconcilers: one per kind, each delegating decisions to
// internal packages (planner, vsphere, iso, agents).
package controllers

import (
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configure the controllers.
type Options struct {
	// AllowCrossNamespaceSecrets lets a pool read a credentials Secret outside its namespace.
	AllowCrossNamespaceSecrets bool
}

// Setup registers every controller with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	return nil
}
