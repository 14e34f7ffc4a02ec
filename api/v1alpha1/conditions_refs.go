package v1alpha1

// Reasons of a pool whose references disagree with its NodePool (DemandObserved=False and Ready=False): the
// pool cannot see its NodePool's AgentMachines, so it takes no action until the spec is fixed.
const (
	// ReasonHostedClusterMismatch: spec.hostedClusterRef names another HostedCluster than the NodePool's
	// spec.clusterName.
	ReasonHostedClusterMismatch = "HostedClusterMismatch"
	// ReasonControlPlaneNamespaceMismatch: spec.controlPlaneNamespace is not the namespace HyperShift
	// renders the NodePool's Machines and AgentMachines in (<namespace>-<NodePool's spec.clusterName>).
	ReasonControlPlaneNamespaceMismatch = "ControlPlaneNamespaceMismatch"
)
