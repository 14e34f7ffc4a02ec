// Package watch holds what the controllers' watches are built from: the cache's field indexes that
// map external objects (Agents, AgentMachines, NodePools, InfraEnvs, ConfigMaps) to pools and
// VsphereAgents without listing the cluster, and the predicates both controllers filter events with.
// It exists so that an index is registered once, before the controllers start, under one name both
// controllers and their tests use.
package watch
