// Package vsphereagent owns the VsphereAgent controller: one VM's lifecycle. It creates the VM once
// (crash-safe: the instance UUID is the VsphereAgent's UID), finds and prepares the Agent it registers,
// follows its binding to a Machine, replaces a VM that never registers, reports its image, runs the ISO
// ejection (package ejection) and, on deletion, destroys the VM and its Agent only behind fresh reads
// proving no Machine needs them. It does not import package pool: what both read of a pool's spec is
// internal/poolspec's.
package vsphereagent

// ControllerName names the VsphereAgent controller (its workqueue, metrics and liveness entries).
const ControllerName = "vsphereagent"
