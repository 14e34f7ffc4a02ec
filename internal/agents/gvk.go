// Package agents reads and patches the external objects the operator works with (Agent, InfraEnv,
// AgentMachine, Machine, NodePool, HostedCluster) as unstructured objects, through small typed views.
// Their API modules do not build with ours (see toolchain notes), and the provider's condition shapes
// differ between versions, so conditions are read as plain maps.
package agents

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersionKinds of the external objects.
var (
	AgentGVK         = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "Agent"}
	InfraEnvGVK      = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "InfraEnv"}
	AgentMachineGVK  = schema.GroupVersionKind{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Kind: "AgentMachine"}
	MachineGVK       = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta1", Kind: "Machine"}
	NodePoolGVK      = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "NodePool"}
	HostedClusterGVK = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedCluster"}
)

// ExternalGVKs lists every external kind the operator watches or reads.
var ExternalGVKs = []schema.GroupVersionKind{AgentGVK, InfraEnvGVK, AgentMachineGVK, MachineGVK, NodePoolGVK, HostedClusterGVK}

// Well-known keys on external objects.
const (
	// AnnotationNodePool names the NodePool (<namespace>/<name>) of a Machine or AgentMachine.
	AnnotationNodePool = "hypershift.openshift.io/nodePool"
	// LabelAgentMachineRef is set by the Agent CAPI provider on a reserved Agent.
	LabelAgentMachineRef = "agentMachineRef"
	// AnnotationAgentMachineRefNamespace accompanies LabelAgentMachineRef.
	AnnotationAgentMachineRefNamespace = "agentMachineRefNamespace"
	// LabelInfraEnv names the InfraEnv an Agent registered through.
	LabelInfraEnv = "infraenvs.agent-install.openshift.io"
	// ReasonNoSuitableAgents is the provider's "nothing fits" reason: our demand signal.
	ReasonNoSuitableAgents = "NoSuitableAgents"
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
