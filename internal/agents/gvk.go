// Package agents reads and patches the external objects the operator works with (Agent, InfraEnv,
// AgentMachine, Machine, NodePool, HostedCluster) as unstructured objects, through small typed views.
// Their API modules do not build with ours (see toolchain notes), and the provider's condition shapes
// differ between versions, so conditions are read as plain maps. It also holds the fresh (uncached)
// reads that guard every release of a VM and the guarded writes that follow them (Unapprove under an
// optimistic lock, DeleteAgent under a UID precondition; fresh.go).
package agents

import (
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// capiGroup is Cluster API core's API group (Machine, MachineSet).
const capiGroup = "cluster.x-k8s.io"

// GroupVersionKinds of the external objects.
var (
	AgentGVK         = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "Agent"}
	InfraEnvGVK      = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "InfraEnv"}
	AgentMachineGVK  = schema.GroupVersionKind{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Kind: "AgentMachine"}
	NodePoolGVK      = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "NodePool"}
	HostedClusterGVK = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedCluster"}
)

// MachineVersions are the cluster.x-k8s.io versions of Machine the operator reads (only metadata: the
// NodePool annotation, existence, deletion), preferred first. CAPI v1.11+ stores v1beta2 and converts
// v1beta1 through a webhook (deprecated); older hubs serve v1beta1 only.
var MachineVersions = []string{"v1beta2", "v1beta1"}

// machineGVK is the Machine version the hub serves, set once the RESTMapper knows (UseServedMachineVersion).
var machineGVK atomic.Pointer[schema.GroupVersionKind]

// MachineGVK is the Machine version to read: the one the hub serves, or the preferred one before that is
// known.
func MachineGVK() schema.GroupVersionKind {
	if g := machineGVK.Load(); g != nil {
		return *g
	}
	return schema.GroupVersionKind{Group: capiGroup, Version: MachineVersions[0], Kind: "Machine"}
}

// UseServedMachineVersion picks the first of MachineVersions the hub serves and makes MachineGVK return it.
func UseServedMachineVersion(mapper meta.RESTMapper) (schema.GroupVersionKind, error) {
	gk := schema.GroupKind{Group: capiGroup, Kind: "Machine"}
	var errs []error
	for _, v := range MachineVersions {
		if _, err := mapper.RESTMapping(gk, v); err != nil {
			errs = append(errs, err)
			continue
		}
		gvk := gk.WithVersion(v)
		machineGVK.Store(&gvk)
		return gvk, nil
	}
	return schema.GroupVersionKind{}, fmt.Errorf("no served version of %s among %v: %w", gk, MachineVersions, errors.Join(errs...))
}

// ExternalGroupKinds lists every external kind the operator watches or reads, with the versions it can
// read each at (preferred first).
var ExternalGroupKinds = []struct {
	schema.GroupKind
	Versions []string
}{
	{AgentGVK.GroupKind(), []string{AgentGVK.Version}},
	{InfraEnvGVK.GroupKind(), []string{InfraEnvGVK.Version}},
	{AgentMachineGVK.GroupKind(), []string{AgentMachineGVK.Version}},
	{schema.GroupKind{Group: capiGroup, Kind: "Machine"}, MachineVersions},
	{NodePoolGVK.GroupKind(), []string{NodePoolGVK.Version}},
	{HostedClusterGVK.GroupKind(), []string{HostedClusterGVK.Version}},
}

// Well-known keys on external objects.
const (
	// AnnotationNodePool names the NodePool (<namespace>/<name>) of a Machine or AgentMachine.
	AnnotationNodePool = "hypershift.openshift.io/nodePool"
	// LabelAgentMachineRef is set by the Agent CAPI provider on a reserved Agent; its value is the
	// AgentMachine's name on current providers and its UID on providers from before late 2024 (see
	// ReservedBy, the one reading of it).
	LabelAgentMachineRef = "agentMachineRef"
	// AnnotationAgentMachineRefNamespace accompanies LabelAgentMachineRef: the reserving AgentMachine's
	// namespace (absent on the oldest providers).
	AnnotationAgentMachineRefNamespace = "agentMachineRefNamespace"
	// LabelInfraEnv names the InfraEnv an Agent registered through.
	LabelInfraEnv = "infraenvs.agent-install.openshift.io"
	// ProviderReasonNoSuitableAgents is the Agent CAPI provider's "nothing fits" reason on an AgentMachine:
	// our demand signal. A foreign value read, not written (the pool's own planned-action reason with the
	// same word is afv1.ReasonNoSuitableAgents).
	ProviderReasonNoSuitableAgents = "NoSuitableAgents"
)

// New returns an empty unstructured object of the kind.
func New(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// NewList returns an empty unstructured list of the kind.
func NewList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}
