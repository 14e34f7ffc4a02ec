package world

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersionKinds of the external objects the world plays. Machines are v1beta2: the version Cluster
// API (v1.11 and later) stores and its controllers write.
var (
	AgentGVK         = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "Agent"}
	InfraEnvGVK      = schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "InfraEnv"}
	AgentMachineGVK  = schema.GroupVersionKind{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Kind: "AgentMachine"}
	MachineGVK       = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
	NodePoolGVK      = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "NodePool"}
	HostedClusterGVK = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedCluster"}
)

// Keys the real systems put on their objects.
const (
	// AnnotationNodePool is set by HyperShift on Machines and AgentMachines: <namespace>/<nodepool>.
	AnnotationNodePool = "hypershift.openshift.io/nodePool"
	// LabelAgentMachineRef is set by the Agent CAPI provider on a reserved Agent. Its value is the
	// AgentMachine's UID (the provider's getAgentMachineRefLabel), not its name.
	LabelAgentMachineRef = "agentMachineRef"
	// AnnotationAgentMachineRefNamespace is set with LabelAgentMachineRef (AgentMachine namespace).
	AnnotationAgentMachineRefNamespace = "agentMachineRefNamespace"
	// LabelInfraEnv is set by assisted-service on every Agent: the InfraEnv name.
	LabelInfraEnv = "infraenvs.agent-install.openshift.io"
	// LabelClusterName is CAPI's cluster label on Machines.
	LabelClusterName = "cluster.x-k8s.io/cluster-name"
	// FinalizerMachine is CAPI's Machine finalizer; the world removes it once the Agent is unbound.
	FinalizerMachine = "machine.cluster.x-k8s.io"
	// FinalizerAgentMachine is the Agent CAPI provider's AgentMachine finalizer.
	FinalizerAgentMachine = "agentmachine.agent-install.openshift.io/deprovision"
)

// Condition types and reasons used by assisted-service (Agent) and the Agent CAPI provider (AgentMachine).
const (
	CondConnected       = "Connected"
	CondValidated       = "Validated"
	CondBound           = "Bound"
	CondInstalled       = "Installed"
	CondSpecSynced      = "SpecSynced"
	CondRequirementsMet = "RequirementsMet"
	CondImageCreated    = "ImageCreated"
	CondAgentReserved   = "AgentReserved"
	CondReady           = "Ready"

	ReasonNoSuitableAgents       = "NoSuitableAgents"
	ReasonUnbound                = "Unbound"
	ReasonBound                  = "Bound"
	ReasonUnbindingPendingUser   = "UnbindingPendingUserAction"
	ReasonInstallationNotStarted = "InstallationNotStarted"
	ReasonInstallationInProgress = "InstallationInProgress"
	ReasonInstallationCompleted  = "InstallationCompleted"
	ReasonAgentIsConnected       = "AgentIsConnected"
	ReasonAgentIsDisconnected    = "AgentIsDisconnected"
	ReasonValidationsPassing     = "ValidationsPassing"
	ReasonValidationsUnknown     = "ValidationsUnknown"
)

func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func newList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// Short aliases keep signatures readable.
type (
	schemaGVK       = schema.GroupVersionKind
	unstructuredObj = unstructured.Unstructured
)

// ControlPlaneNamespace is where HyperShift renders a hosted cluster's Machines and AgentMachines:
// "<hosted cluster namespace>-<hosted cluster name>".
func ControlPlaneNamespace(hostedClusterNamespace, hostedClusterName string) string {
	return hostedClusterNamespace + "-" + hostedClusterName
}
