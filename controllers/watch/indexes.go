package watch

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// Field indexes let watches map external objects to pools and VMs without listing the cluster.
const (
	IndexPoolRef           = "spec.poolRef.name"              // VsphereAgent -> pool name
	IndexNodePool          = "spec.nodePoolRef.name"          // pool -> NodePool name
	IndexInfraEnv          = "spec.infraEnvRef.name"          // pool -> InfraEnv name
	IndexVMMAC             = "status.vm.macAddress"           // VsphereAgent -> MAC
	IndexVMAgent           = "status.vm.agentRef"             // VsphereAgent -> Agent name
	IndexAgentMAC          = "agent.macAddresses"             // Agent -> MACs
	IndexAgentSerial       = "agent.serial"                   // Agent -> normalized BIOS UUID
	IndexAgentMachinePool  = "agentmachine.nodePool"          // AgentMachine -> "<ns>/<nodePool>"
	IndexAgentMachineRef   = "agentmachine.agentRef.name"     // AgentMachine -> Agent name
	IndexCABundleConfigMap = "spec.iso.caBundleRef.configMap" // pool -> ConfigMap name of its image host CA
)

// SetupIndexes registers the field indexes with the manager's cache (before the controllers start).
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	fi := mgr.GetFieldIndexer()
	type idx struct {
		obj client.Object
		key string
		fn  client.IndexerFunc
	}
	list := []idx{
		{&afv1.VsphereAgent{}, IndexPoolRef, func(o client.Object) []string { return nonEmpty(o.(*afv1.VsphereAgent).Spec.PoolRef.Name) }},
		{&afv1.VsphereAgent{}, IndexVMMAC, func(o client.Object) []string {
			return nonEmpty(agents.NormalizeMAC(o.(*afv1.VsphereAgent).Status.VM.MACAddress))
		}},
		{&afv1.VsphereAgent{}, IndexVMAgent, func(o client.Object) []string { return nonEmpty(o.(*afv1.VsphereAgent).Status.VM.AgentName) }},
		{&afv1.VsphereAgentPool{}, IndexNodePool, func(o client.Object) []string {
			return nonEmpty(o.(*afv1.VsphereAgentPool).Spec.NodePoolRef.Name)
		}},
		{&afv1.VsphereAgentPool{}, IndexInfraEnv, func(o client.Object) []string {
			return nonEmpty(o.(*afv1.VsphereAgentPool).Spec.InfraEnvRef.Name)
		}},
		{&afv1.VsphereAgentPool{}, IndexCABundleConfigMap, func(o client.Object) []string {
			if ref := o.(*afv1.VsphereAgentPool).Spec.ISO.CABundleRef; ref != nil && ref.Kind != afv1.CABundleKindSecret {
				return nonEmpty(ref.Name)
			}
			return nil
		}},
		{agents.New(agents.AgentGVK), IndexAgentMAC, func(o client.Object) []string {
			return agents.AgentFrom(o.(*unstructured.Unstructured)).MACs
		}},
		{agents.New(agents.AgentGVK), IndexAgentSerial, func(o client.Object) []string {
			return nonEmpty(agents.NormalizeUUID(agents.AgentFrom(o.(*unstructured.Unstructured)).Serial))
		}},
		{agents.New(agents.AgentMachineGVK), IndexAgentMachinePool, func(o client.Object) []string {
			return nonEmpty(o.GetAnnotations()[agents.AnnotationNodePool])
		}},
		{agents.New(agents.AgentMachineGVK), IndexAgentMachineRef, func(o client.Object) []string {
			name, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "status", "agentRef", "name")
			return nonEmpty(name)
		}},
	}
	for _, i := range list {
		if err := fi.IndexField(ctx, i.obj, i.key, i.fn); err != nil {
			return err
		}
	}
	return nil
}

func nonEmpty(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return []string{s}
}
