// Package credentials reads and validates a pool's vCenter credentials Secret (uncached, its data
// never logged, a Secret in another namespace only where the operator allows it, every refusal of
// such a Secret worded alike) and keeps, per Secret, what a pool's pass last read for its VM passes
// for a short time (Cache). It also maps a credentials or vSphere error to the VSphereReachable
// reason. It exists so that Secret handling, the part of the operator a leak would hurt most, sits
// in one place that can be read and fuzzed on its own.
package credentials
