// Package world plays the systems around the operator in tests, the demo and the benchmarks:
// HyperShift/CAPI (Machines and AgentMachines for a NodePool's replicas, deletion with finalizers),
// the Agent CAPI provider (reserving suitable Agents for waiting AgentMachines, unbinding on
// deletion) and assisted-service (registering an Agent for every powered-on VM that boots one of an
// InfraEnv's discovery images, known by the ISO's content; reporting the VM's hardware as the inventory,
// validating it against the hub's requirements, binding, installing, and an installed host that boots
// discovery again). docs/world.md lists each modelled fact and its source. It talks to a real API server through a
// controller-runtime client with unstructured objects, and to the govmomi vSphere simulator with
// govmomi directly, exactly as the real systems would: the operator cannot tell it is simulated.
//
// The Driver runs either as explicit Step calls (one pass of every behaviour, deterministic, for
// tests) or as a loop (Run) for the demo. Time-based behaviour (registration, validation and
// installation delays) reads an injected clock.
package world
