package agents

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// AgentMachine is a view of a CAPI AgentMachine.
type AgentMachine struct {
	Name, Namespace string
	// UID is what Agent CAPI providers before late 2024 wrote into a reserved Agent's agentMachineRef
	// label; current ones write Name (see Agent.ReservedBy).
	UID types.UID
	// NodePool is the annotation value "<namespace>/<nodePool>".
	NodePool     string
	OwnerMachine string
	// OwnerMachineSet is the UID of the CAPI MachineSet among its owners: CAPI's MachineSet creates the
	// AgentMachine owned by itself and named like the Machine it creates next; the Machine controller adds
	// the Machine owner reference later.
	OwnerMachineSet types.UID
	Deleting        bool
	AgentRef        string
	Conditions      []Condition
	Selector        labels.Selector
}

// AgentMachineFrom builds the view.
func AgentMachineFrom(u *unstructured.Unstructured) AgentMachine {
	am := AgentMachine{
		Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), NodePool: u.GetAnnotations()[AnnotationNodePool],
		Deleting: u.GetDeletionTimestamp() != nil, Conditions: Conditions(u),
	}
	for _, ref := range u.GetOwnerReferences() {
		switch {
		case ref.Kind == "Machine":
			am.OwnerMachine = ref.Name
		case ref.Kind == "MachineSet" && strings.HasPrefix(ref.APIVersion, capiGroup+"/"):
			am.OwnerMachineSet = ref.UID
		}
	}
	am.AgentRef, _, _ = unstructured.NestedString(u.Object, "status", "agentRef", "name")
	if sel, found, _ := unstructured.NestedMap(u.Object, "spec", "agentLabelSelector"); found {
		var ls metav1.LabelSelector
		if err := runtimeConvert(sel, &ls); err == nil {
			if s, err := metav1.LabelSelectorAsSelector(&ls); err == nil {
				am.Selector = s
			}
		}
	}
	return am
}

// WaitsForAgent reports the demand signal: AgentReserved=False/NoSuitableAgents (current provider) or
// Ready=False/NoSuitableAgents (older providers), with no agentRef yet.
func (am AgentMachine) WaitsForAgent() bool {
	if am.AgentRef != "" || am.Deleting {
		return false
	}
	for _, t := range []string{"AgentReserved", "Ready"} {
		if c, ok := FindCondition(am.Conditions, t); ok && c.Status == "False" && c.Reason == ProviderReasonNoSuitableAgents {
			return true
		}
	}
	return false
}

// MachineOfAgentMachine reports whether m is am's Machine: the owner the Machine controller recorded on
// am or, before it has, the Machine CAPI's MachineSet created for am (the same name, in the same
// namespace, controlled by the MachineSet that owns am). A Machine that only shares the name is not.
func MachineOfAgentMachine(m *unstructured.Unstructured, am AgentMachine) bool {
	if m.GetNamespace() != am.Namespace {
		return false
	}
	if am.OwnerMachine != "" {
		return m.GetName() == am.OwnerMachine
	}
	ctrl := metav1.GetControllerOf(m)
	return am.OwnerMachineSet != "" && m.GetName() == am.Name && ctrl != nil && ctrl.Kind == "MachineSet" &&
		strings.HasPrefix(ctrl.APIVersion, capiGroup+"/") && ctrl.UID == am.OwnerMachineSet
}

// IsReady reports Ready=True.
func (am AgentMachine) IsReady() bool { return IsTrue(am.Conditions, "Ready") }

// Machine is a view of a CAPI Machine.
type Machine struct {
	Name, Namespace string
	NodePool        string
	Deleting        bool
	Phase           string
	NodeRef         string
	DeletionTime    *time.Time
}

// MachineFrom builds the view.
func MachineFrom(u *unstructured.Unstructured) Machine {
	m := Machine{Name: u.GetName(), Namespace: u.GetNamespace(), NodePool: u.GetAnnotations()[AnnotationNodePool]}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		m.Deleting = true
		t := ts.Time
		m.DeletionTime = &t
	}
	m.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
	m.NodeRef, _, _ = unstructured.NestedString(u.Object, "status", "nodeRef", "name")
	return m
}

// InfraEnv is a view of an assisted-service InfraEnv.
type InfraEnv struct {
	Name, Namespace string
	ISODownloadURL  string
	CreatedTime     *metav1.Time
	Conditions      []Condition
}

// InfraEnvFrom builds the view.
func InfraEnvFrom(u *unstructured.Unstructured) InfraEnv {
	ie := InfraEnv{Name: u.GetName(), Namespace: u.GetNamespace(), Conditions: Conditions(u)}
	ie.ISODownloadURL, _, _ = unstructured.NestedString(u.Object, "status", "isoDownloadURL")
	if s, found, _ := unstructured.NestedString(u.Object, "status", "createdTime"); found && s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			mt := metav1.NewTime(t)
			ie.CreatedTime = &mt
		}
	}
	return ie
}

// NodePool is a view of a HyperShift NodePool.
type NodePool struct {
	Name, Namespace string
	// ClusterName is spec.clusterName: the HostedCluster (in the NodePool's namespace) it belongs to.
	ClusterName   string
	Replicas      *int64
	AgentSelector *metav1.LabelSelector
}

// HostedControlPlaneNamespace is the namespace HyperShift renders a HostedCluster's control plane in, and
// with it its NodePools' Machines and AgentMachines: "<namespace>-<name>" with the name's dots turned into
// dashes (HyperShift's manifests.HostedControlPlaneNamespace).
func HostedControlPlaneNamespace(hostedClusterNamespace, hostedClusterName string) string {
	return hostedClusterNamespace + "-" + strings.ReplaceAll(hostedClusterName, ".", "-")
}

// NodePoolFrom builds the view.
func NodePoolFrom(u *unstructured.Unstructured) NodePool {
	np := NodePool{Name: u.GetName(), Namespace: u.GetNamespace()}
	np.ClusterName, _, _ = unstructured.NestedString(u.Object, "spec", "clusterName")
	if r, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); found {
		np.Replicas = &r
	}
	if sel, found, _ := unstructured.NestedMap(u.Object, "spec", "platform", "agent", "agentLabelSelector"); found {
		var ls metav1.LabelSelector
		if err := runtimeConvert(sel, &ls); err == nil {
			np.AgentSelector = &ls
		}
	}
	return np
}

// ProviderIDOf is the providerID the Agent CAPI provider writes into the AgentMachine of a reserved Agent
// (agent://<Agent name>) and CAPI copies into the Machine once the AgentMachine is ready.
func ProviderIDOf(agentName string) string { return "agent://" + agentName }

// MachineRunsOn reports whether the Machine's spec.providerID names the Agent. It outlives the
// AgentMachine: CAPI deletes the AgentMachine once the provider releases the pre-terminate hook, while the
// Machine stays until its Node is gone.
func MachineRunsOn(m *unstructured.Unstructured, agentName string) bool {
	id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
	return agentName != "" && id == ProviderIDOf(agentName)
}
