// Package poolspec reads a VsphereAgentPool's spec (and what its VsphereAgents recorded) the way every
// controller must read it alike: the failure domains and their placement (Domains, DomainOf,
// PlacementSpec), what one VM takes (VMNeed), the hardware profile (Hardware, HardwareStatus), the labels
// and role of the pool's Agents (AgentLabels, TopologyLabels, Role), the VM's ownership marker and
// datacenter, the registration timeout and the discovery image a VM booted or the pool serves. Pure
// functions, no client and no state: the pool and the VsphereAgent controllers share them without
// importing each other.
package poolspec
