package controllers

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
	indexPoolRef          = "spec.poolRef.name"          // VsphereAgent -> pool name
	indexNodePool         = "spec.nodePoolRef.name"      // pool -> NodePool name
	indexInfraEnv         = "spec.infraEnvRef.name"      // pool -> InfraEnv name
	indexVMMAC            = "status.vm.macAddress"       // VsphereAgent -> MAC
	indexVMAgent          = "status.vm.agentRef"         // VsphereAgent -> Agent name
	indexAgentMAC         = "agent.macAddresses"         // Agent -> MACs
	indexAgentSerial      = "agent.serial"               // Agent -> normalized BIOS UUID
	indexAgentMachinePool = "agentmachine.nodePool"      // AgentMachine -> "<ns>/<nodePool>"
	indexAgentMachineRef  = "agentmachine.agentRef.name" // AgentMachine -> Agent name
)

func setupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	fi := mgr.GetFieldIndexer()
	type idx struct {
		obj client.Object
		key string
		fn  client.IndexerFunc
	}
	list := []idx{
		{&afv1.VsphereAgent{}, indexPoolRef, func(o client.Object) []string { return nonEmpty(o.(*afv1.VsphereAgent).Spec.PoolRef.Name) }},
		{&afv1.VsphereAgent{}, indexVMMAC, func(o client.Object) []string {
			return nonEmpty(agents.NormalizeMAC(o.(*afv1.VsphereAgent).Status.VM.MACAddress))
		}},
		{&afv1.VsphereAgent{}, indexVMAgent, func(o client.Object) []string { return nonEmpty(o.(*afv1.VsphereAgent).Status.VM.AgentName) }},
		{&afv1.VsphereAgentPool{}, indexNodePool, func(o client.Object) []string {
			return nonEmpty(o.(*afv1.VsphereAgentPool).Spec.NodePoolRef.Name)
		}},
		{&afv1.VsphereAgentPool{}, indexInfraEnv, func(o client.Object) []string {
			return nonEmpty(o.(*afv1.VsphereAgentPool).Spec.InfraEnvRef.Name)
		}},
		{agents.New(agents.AgentGVK), indexAgentMAC, func(o client.Object) []string {
			return agents.AgentFrom(o.(*unstructured.Unstructured)).MACs
		}},
		{agents.New(agents.AgentGVK), indexAgentSerial, func(o client.Object) []string {
			return nonEmpty(agents.NormalizeUUID(agents.AgentFrom(o.(*unstructured.Unstructured)).Serial))
		}},
		{agents.New(agents.AgentMachineGVK), indexAgentMachinePool, func(o client.Object) []string {
			return nonEmpty(o.GetAnnotations()[agents.AnnotationNodePool])
		}},
		{agents.New(agents.AgentMachineGVK), indexAgentMachineRef, func(o client.Object) []string {
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
