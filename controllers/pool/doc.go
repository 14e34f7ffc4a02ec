// Package pool owns the VsphereAgentPool controller: it observes a NodePool's demand (AgentMachines
// waiting for an Agent), the pool's VsphereAgents and Agents, the InfraEnv, vCenter's failure domains
// and capacity and the discovery ISO cache, gathers them into a planner.Snapshot, lets planner.Plan
// decide, and carries out the plan (create VsphereAgents, release surplus and outdated VMs behind fresh
// reads, expire failures, scan for orphans). It writes the pool's status (batched when only counters
// move) and cleans up on deletion. It never touches a single VM's lifecycle: that is package
// vsphereagent's, which it does not import.
package pool
