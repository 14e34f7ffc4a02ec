package poolspec

import (
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// Ownership is the vSphere ownership marker of va's VM: the VsphereAgent and (when known) its pool.
func Ownership(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) vsphere.Ownership {
	o := vsphere.Ownership{OwnerUID: string(va.UID), OwnerName: va.Namespace + "/" + va.Name}
	if pool != nil {
		o.PoolUID, o.PoolName = string(pool.UID), pool.Namespace+"/"+pool.Name
	}
	return o
}

// DatacenterOf is the datacenter of va's VM: the one recorded at creation, else the pool's.
func DatacenterOf(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) string {
	if va.Status.VM.Datacenter != "" {
		return va.Status.VM.Datacenter
	}
	return pool.Spec.VSphere.Datacenter
}

// DefaultRegistrationTimeout applies when spec.registrationTimeout is unset.
const DefaultRegistrationTimeout = 20 * time.Minute

// RegistrationTimeout is how long a VM of the pool may take to register its Agent (spec.registrationTimeout,
// else DefaultRegistrationTimeout).
func RegistrationTimeout(pool *afv1.VsphereAgentPool) time.Duration {
	if pool != nil && pool.Spec.RegistrationTimeout != nil {
		return pool.Spec.RegistrationTimeout.Duration
	}
	return DefaultRegistrationTimeout
}

// AgentLabels are the labels every Agent of the pool carries once prepared: spec.agent.labels,
// the role label and the pool label (the per-VM vsphereagent label is left out: no selector of a
// NodePool can name one VM).
func AgentLabels(pool *afv1.VsphereAgentPool) labels.Set {
	set := labels.Set{afv1.LabelNodePoolRole: Role(pool), afv1.LabelPool: pool.Name}
	for k, v := range pool.Spec.Agent.LabelSet() {
		set[k] = v
	}
	return set
}

// Role is the role the pool's Agents get (spec.agent.role, "worker" when unset).
func Role(pool *afv1.VsphereAgentPool) string {
	if pool.Spec.Agent.Role == "" {
		return "worker"
	}
	return pool.Spec.Agent.Role
}
