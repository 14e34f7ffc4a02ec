// Package config holds the controllers' Options, made of three small types: Settings (values from
// flags, with their production defaults), Services (the process-wide clients, clocks and memories they
// are handed) and Hooks (the test seams, such as the crash-point seam); it also holds the
// manager client's options and the requeue constants both controllers use. It exists so that the
// wiring (package controllers, cmd/app) and the two controllers, which do not import each other,
// agree on one configuration type without importing the package that wires them.
package config
