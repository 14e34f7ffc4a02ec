package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// immutableCases create a valid object, then change a field that may never change after creation.
var immutableCases = []struct {
	name     string
	manifest string
	change   edit
	field    string
}{
	{"pool nodePoolRef", validPoolYAML, set("spec.nodePoolRef.name", "other-workers"), "spec.nodePoolRef"},
	{"pool controlPlaneNamespace", validPoolYAML, set("spec.controlPlaneNamespace", "clusters-other"), "spec.controlPlaneNamespace"},
	{"agent poolRef", validAgentYAML, set("spec.poolRef.name", "other-pool"), "spec.poolRef"},
	{"agent failureDomain added", validAgentYAML, set("spec.failureDomain", "zone-a"), "spec"},
}

func TestImmutableFieldsRefuseUpdates(t *testing.T) {
	for _, tc := range immutableCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := createValid(t, tc.manifest)
			tc.change(t, obj)
			assertRefused(t, k8s.Update(ctx, obj), tc.field)
		})
	}
}

// TestMutableFieldsAcceptUpdates is the control for the immutability cases: the same objects can
// change everything else, and an unchanged immutable field passes the transition rule.
func TestMutableFieldsAcceptUpdates(t *testing.T) {
	obj := createValid(t, validPoolYAML)
	for _, e := range []edit{
		set("spec.cleanupPolicy", "Retain"),
		set("spec.template.numCPUs", 8),
		set("spec.paused", true),
		set("spec.standby", 5), // equal to limits.maxVMs below: allowed
		set("spec.hostedClusterRef.name", "renamed"),
		set("spec.limits", map[string]interface{}{"maxVMs": 5, "maxConcurrentProvisioning": 5}),
		set("spec.vsphere.failureDomains", []interface{}{map[string]interface{}{"name": "zone-a", "region": "eu", "computeCluster": "C1",
			"datastore": "ds1", "network": "pg1", "folder": "f/a", "maxVMs": 3}, map[string]interface{}{"name": "zone-b", "resourcePool": "C2/Resources/rp"}}),
	} {
		e(t, obj)
	}
	if err := k8s.Update(ctx, obj); err != nil {
		t.Fatalf("updating mutable fields: %v", err)
	}
}

func createValid(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := objectFromYAML(t, manifest)
	obj.SetName(uniqueName("immutable"))
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatalf("creating the valid object: %v", err)
	}
	return obj
}
