package world_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFixtureCRDsServeTheModelledFields checks that each external CRD fixture is installed, accepts an
// object with the fields the real API requires, keeps the fields we use (no pruning) and has a status
// subresource where upstream has one.
func TestFixtureCRDsServeTheModelledFields(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	cases := []struct {
		gvk    schema.GroupVersionKind
		spec   map[string]any
		status map[string]any
		check  []string
	}{
		{
			gvk:    schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "Agent"},
			spec:   map[string]any{"approved": true, "hostname": "h1", "role": "worker", "clusterDeploymentName": map[string]any{"name": "c", "namespace": "n"}},
			status: map[string]any{"inventory": map[string]any{"interfaces": []any{map[string]any{"macAddress": "00:50:56:aa:bb:cc", "flags": []any{"up"}, "ipV4Addresses": []any{}, "ipV6Addresses": []any{}}}, "systemVendor": map[string]any{"serialNumber": "VMware-42 1e"}}, "conditions": []any{map[string]any{"type": "Bound", "status": "False", "reason": "Unbound"}}},
			check:  []string{"status.inventory.interfaces", "status.inventory.systemVendor.serialNumber", "spec.clusterDeploymentName.name"},
		},
		{
			gvk:    schema.GroupVersionKind{Group: "agent-install.openshift.io", Version: "v1beta1", Kind: "InfraEnv"},
			spec:   map[string]any{"pullSecretRef": map[string]any{"name": "ps"}},
			status: map[string]any{"isoDownloadURL": "https://x/iso?api_key=1", "createdTime": "2026-01-01T00:00:00Z"},
			check:  []string{"status.isoDownloadURL", "status.createdTime"},
		},
		{
			gvk:    schema.GroupVersionKind{Group: "capi-provider.agent-install.openshift.io", Version: "v1beta1", Kind: "AgentMachine"},
			spec:   map[string]any{"agentLabelSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}},
			status: map[string]any{"agentRef": map[string]any{"name": "a", "namespace": "n"}, "conditions": []any{map[string]any{"type": "AgentReserved", "status": "False", "reason": "NoSuitableAgents", "message": "", "observedGeneration": int64(1), "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
			check:  []string{"spec.agentLabelSelector.matchLabels", "status.agentRef.name", "status.conditions"},
		},
		{
			gvk: schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "NodePool"},
			spec: map[string]any{"clusterName": "c", "replicas": int64(2), "management": map[string]any{"upgradeType": "InPlace"},
				"release":  map[string]any{"image": "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"},
				"platform": map[string]any{"type": "Agent", "agent": map[string]any{"agentLabelSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}}},
			status: map[string]any{"replicas": int64(1)},
			check:  []string{"spec.platform.agent.agentLabelSelector.matchLabels", "status.replicas"},
		},
		{
			gvk: schema.GroupVersionKind{Group: "hypershift.openshift.io", Version: "v1beta1", Kind: "HostedCluster"},
			spec: map[string]any{
				"release":    map[string]any{"image": "quay.io/openshift-release-dev/ocp-release:4.20.0-x86_64"},
				"pullSecret": map[string]any{"name": "ps"},
				"networking": map[string]any{"clusterNetwork": []any{map[string]any{"cidr": "10.132.0.0/14"}}, "serviceNetwork": []any{map[string]any{"cidr": "172.31.0.0/16"}}},
				"etcd":       map[string]any{"managementType": "Managed", "managed": map[string]any{"storage": map[string]any{"type": "PersistentVolume"}}},
				"platform":   map[string]any{"type": "Agent", "agent": map[string]any{"agentNamespace": "x"}},
				"services": []any{
					map[string]any{"service": "APIServer", "servicePublishingStrategy": map[string]any{"type": "LoadBalancer"}},
					map[string]any{"service": "OAuthServer", "servicePublishingStrategy": map[string]any{"type": "Route"}},
					map[string]any{"service": "Konnectivity", "servicePublishingStrategy": map[string]any{"type": "Route"}},
					map[string]any{"service": "Ignition", "servicePublishingStrategy": map[string]any{"type": "Route"}},
				},
			},
			status: map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "AsExpected", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}},
			check:  []string{"spec.platform.agent.agentNamespace", "status.conditions"},
		},
		{
			gvk:    schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddressClaim"},
			spec:   map[string]any{"poolRef": map[string]any{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "pool"}},
			status: map[string]any{"addressRef": map[string]any{"name": "addr"}},
			check:  []string{"spec.poolRef.kind", "status.addressRef.name"},
		},
		{
			// IPAddress has no status (and no status subresource) upstream.
			gvk: schema.GroupVersionKind{Group: "ipam.cluster.x-k8s.io", Version: "v1beta2", Kind: "IPAddress"},
			spec: map[string]any{"address": "10.0.0.10", "prefix": int64(24), "gateway": "10.0.0.1",
				"claimRef": map[string]any{"name": "claim"}, "poolRef": map[string]any{"apiGroup": "ipam.cluster.x-k8s.io", "kind": "InClusterIPPool", "name": "pool"}},
			check: []string{"spec.address", "spec.prefix", "spec.claimRef.name"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.gvk.Kind+"/"+tc.gvk.Version, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(tc.gvk)
			obj.SetNamespace(ns)
			obj.SetGenerateName("fixture-")
			obj.Object["spec"] = tc.spec
			if err := k8s.Create(ctx, obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			if tc.status != nil {
				obj.Object["status"] = tc.status
				if err := k8s.Status().Update(ctx, obj); err != nil {
					t.Fatalf("status update: %v", err)
				}
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(tc.gvk)
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("get: %v", err)
			}
			for _, path := range tc.check {
				if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, splitPath(path)...); !found {
					t.Errorf("%s pruned or not stored: %v", path, got.Object)
				}
			}
		})
	}
}
