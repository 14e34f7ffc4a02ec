package app

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// machineGK is CAPI's Machine at any served version (agents.MachineVersions).
var machineGK = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Machine"}

// agentStatusKept and agentInventoryKept are the parts of an Agent's status the operator reads
// (agents.AgentFrom: conditions, debugInfo.state, the interfaces' MACs, systemVendor.serialNumber).
var (
	agentStatusKept    = []string{"conditions", "debugInfo"}
	agentInventoryKept = []string{"interfaces", "systemVendor"}
)

// cacheOptions narrow what the informers hold. The operator watches Agents, AgentMachines and Machines
// cluster-wide, and on a shared hub most of them belong to other clusters; none can be left out by a
// selector: an Agent is found by its MAC before the operator labels it, Machines and AgentMachines are
// matched by HyperShift's NodePool annotation (labels carry no pool), and the namespaces pools use are
// only known at run time. So every object is narrowed instead (cacheTransform); an OperatorGroup-scoped
// install also restricts the cache to its namespaces.
func cacheOptions(watchNamespaces []string) cache.Options {
	o := cache.Options{DefaultTransform: cacheTransform}
	if len(watchNamespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range watchNamespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// cacheTransform runs on every object before the cache stores it:
//   - managedFields are dropped from every kind (nothing reads them; a status-heavy object's are often
//     as large as the rest of it). A write of a cached object keeps the server's: an absent field leaves
//     them unchanged.
//   - a Machine keeps only its metadata: the operator reads a Machine from its cache only for its NodePool
//     annotation, existence and deletion; the one spec read (spec.providerID, agents.MachineReferencesAgent)
//     is live, through the API reader.
//   - an Agent's status keeps only what agents.AgentFrom reads (conditions, debugInfo, and of the inventory
//     the interfaces and systemVendor): assisted-service's validationsInfo, progress and the rest of the
//     inventory (disks, CPU flags, memory, ...) are most of a real Agent. The operator never writes an
//     Agent's status, and its spec writes are patches, which leave the trimmed fields alone.
//
// Anything that reads more of a Machine or an Agent must read it through the API reader (or widen this).
func cacheTransform(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil { // e.g. a deletion tombstone: stored as it is
		return in, nil
	}
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return in, nil
	}
	switch u.GroupVersionKind().GroupKind() {
	case machineGK:
		for k := range u.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" {
				delete(u.Object, k)
			}
		}
	case agents.AgentGVK.GroupKind():
		trimAgentStatus(u)
	}
	return in, nil
}

func trimAgentStatus(u *unstructured.Unstructured) {
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return
	}
	kept := keep(status, agentStatusKept)
	if inv, ok := status["inventory"].(map[string]any); ok {
		kept["inventory"] = keep(inv, agentInventoryKept)
	}
	u.Object["status"] = kept
}

func keep(m map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
