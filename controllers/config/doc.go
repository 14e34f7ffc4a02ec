// Package config holds the controllers' Options (settings with their production defaults, the
// process-wide services they are handed, and the test seams, such as the crash-point seam), the
// manager client's options and the requeue constants both controllers use. It exists so that the
// wiring (package controllers, cmd/app) and the two controllers, which do not import each other,
// agree on one configuration type without importing the package that wires them.
package config
