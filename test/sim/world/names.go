package world

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/containeroo/agent-forge-operator/test/sim/bindable"
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

	// What HyperShift renders for an Agent NodePool in the control-plane namespace; CAPI's own controllers
	// (a real process, see test/sim/capicore) turn the MachineDeployment into MachineSets, Machines and
	// AgentMachines.
	MachineDeploymentGVK    = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineDeployment"}
	MachineSetGVK           = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineSet"}
	ClusterGVK              = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	AgentClusterGVK         = schema.GroupVersionKind{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Kind: "AgentCluster"}
	AgentMachineTemplateGVK = schema.GroupVersionKind{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Kind: "AgentMachineTemplate"}
	HostedControlPlaneGVK   = schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedControlPlane"}
)

// Keys the real systems put on their objects.
const (
	// AnnotationNodePool is set by HyperShift on Machines and AgentMachines: <namespace>/<nodepool>.
	AnnotationNodePool = "hypershift.openshift.io/nodePool"
	// LabelAgentMachineRef is set by the Agent CAPI provider on a reserved Agent. The current provider
	// (cluster-api-provider-agent since 2de8dad, 2024-09) writes the AgentMachine's name; older ones
	// (4bf2401 2022-01 until then) wrote its UID (ProviderUIDLabel).
	LabelAgentMachineRef = bindable.LabelAgentMachineRef
	// AnnotationAgentMachineRefNamespace is set with LabelAgentMachineRef (AgentMachine namespace).
	AnnotationAgentMachineRefNamespace = "agentMachineRefNamespace"
	// LabelInfraEnv is set by assisted-service on every Agent: the InfraEnv name.
	LabelInfraEnv = "infraenvs.agent-install.openshift.io"
	// LabelClusterName is CAPI's cluster label on Machines.
	LabelClusterName = "cluster.x-k8s.io/cluster-name"
	// FinalizerMachine is CAPI's Machine finalizer (CAPI removes it when the Machine's deletion completes).
	FinalizerMachine = "machine.cluster.x-k8s.io"
	// AnnotationPreTerminateHook is the Agent provider's pre-terminate hook on a Machine: CAPI deletes the
	// AgentMachine (and the Node) only after the provider has unbound the Agent and removed it.
	AnnotationPreTerminateHook = "pre-terminate.delete.hook.machine.cluster.x-k8s.io/agentmachine"
	// AnnotationDeleteMachine marks the Machine CAPI's MachineSet deletes first on scale-down.
	AnnotationDeleteMachine = "cluster.x-k8s.io/delete-machine"
	// LabelBackup is the label the provider adds to the objects a hub backup must keep.
	LabelBackup = "cluster.open-cluster-management.io/backup"
	// LabelAgentInstallWatch makes assisted-service watch a Secret (the provider's ignition token Secret).
	LabelAgentInstallWatch = "agent-install.openshift.io/watch"
	// AnnotationPaused pauses the provider on one AgentMachine (Cluster pause is not honoured by it).
	AnnotationPaused = "cluster.x-k8s.io/paused"
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

	CondAgentSpecSynced          = "AgentSpecSynced"
	CondAgentValidated           = "AgentValidated"
	CondAgentRequirementsMet     = "AgentRequirementsMet"
	CondAgentMachineInstalled    = "Installed"
	ReasonAgentNotYetFound       = "AgentNotYetFound"
	ReasonAgentConditionTrue     = "AgentConditionTrue"
	ReasonConditionNotFound      = "ConditionNotFound"
	ReasonIssuesReported         = "IssuesReported"
	ReasonInfoReported           = "InfoReported"
	ReasonAgentReserved          = "AgentReserved"
	ReasonUnbinding              = "Unbinding"
	ReasonWaitingForPreTerminate = "WaitingForPreTerminateHook"

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
