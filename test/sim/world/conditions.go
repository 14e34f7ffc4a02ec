package world

import "github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"

// cond is a condition the world writes (unstructuredcond.Set); Severity only for CAPI v1beta1 conditions.
type cond = unstructuredcond.Condition
