package app

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

var managed = []metav1.ManagedFieldsEntry{{Manager: "assisted-service", Operation: metav1.ManagedFieldsOperationUpdate,
	FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:inventory":{}}}`)}}

// realAgent is an Agent as assisted-service writes it on a real hub (inventory and validations abridged).
func realAgent() *unstructured.Unstructured {
	u := agents.New(agents.AgentGVK)
	u.SetNamespace("agents")
	u.SetName("6c2f7a8e-0d1b-4a55-9c9e-0123456789ab")
	u.SetUID("uid-1")
	u.SetResourceVersion("42")
	u.SetLabels(map[string]string{"infraenvs.agent-install.openshift.io": "ie", "agentMachineRef": "am-1"})
	u.SetAnnotations(map[string]string{agents.AnnotationAgentMachineRefNamespace: "clusters-hc"})
	u.SetManagedFields(managed)
	u.Object["spec"] = map[string]any{"approved": true, "hostname": "w-1", "role": "worker",
		"clusterDeploymentName": map[string]any{"name": "hc", "namespace": "clusters-hc"}, "nodeLabels": map[string]any{"zone": "a"}}
	u.Object["status"] = map[string]any{
		"role": "worker", "bootstrap": false, "progress": map[string]any{"currentStage": "Done", "stageStartTime": "2026-01-01T00:00:00Z"},
		"validationsInfo": map[string]any{"hardware": []any{map[string]any{"id": "has-min-cpu-cores", "status": "success", "message": "Sufficient CPU cores"}}},
		"ntpSources":      []any{map[string]any{"sourceName": "ntp.example.com", "sourceState": "synced"}},
		"debugInfo":       map[string]any{"state": "added-to-existing-cluster", "stateInfo": "Host has rebooted"},
		"inventory": map[string]any{
			"hostname": "w-1", "bmcAddress": "0.0.0.0",
			"cpu":    map[string]any{"count": int64(8), "flags": []any{"fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce"}},
			"memory": map[string]any{"physicalBytes": int64(17179869184), "usableBytes": int64(16765325312)},
			"disks":  []any{map[string]any{"name": "sda", "sizeBytes": int64(128849018880), "byPath": "/dev/disk/by-path/pci-0000:03:00.0-scsi-0:0:0:0"}},
			"interfaces": []any{map[string]any{"name": "ens192", "macAddress": "00:50:56:AA:BB:CC", "flags": []any{"up"},
				"ipV4Addresses": []any{"10.0.0.5/24"}, "ipV6Addresses": []any{}}},
			"systemVendor": map[string]any{"serialNumber": "VMware-42 1e 00 11", "productName": "VMware7,1", "virtual": true},
		},
		"conditions": []any{map[string]any{"type": "Bound", "status": "True", "reason": "Bound"},
			map[string]any{"type": "Installed", "status": "True", "reason": "InstallationCompleted"}},
	}
	return u
}

// Every field the operator reads of an Agent (agents.AgentFrom) survives the cache's transform; the
// rest of its status and its managedFields do not.
func TestCacheTransformKeepsWhatTheOperatorReadsOfAnAgent(t *testing.T) {
	in := realAgent()
	want := agents.AgentFrom(realAgent())
	out, err := cacheTransform(in)
	if err != nil {
		t.Fatal(err)
	}
	u := out.(*unstructured.Unstructured)
	got := agents.AgentFrom(u)
	got.Obj, want.Obj = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the Agent's view changed:\n got %+v\nwant %+v", got, want)
	}
	if len(want.MACs) == 0 || want.Serial == "" || want.State == "" || len(want.Conditions) == 0 || want.NodeLabels == nil {
		t.Fatalf("the fixture leaves a field of the view empty: %+v", want)
	}
	if u.GetManagedFields() != nil {
		t.Error("managedFields kept")
	}
	status := u.Object["status"].(map[string]any)
	for _, gone := range []string{"validationsInfo", "progress", "ntpSources", "role", "bootstrap"} {
		if _, ok := status[gone]; ok {
			t.Errorf("status.%s kept", gone)
		}
	}
	inv := status["inventory"].(map[string]any)
	if len(inv) != 2 || inv["interfaces"] == nil || inv["systemVendor"] == nil {
		t.Errorf("inventory = %v, want only interfaces and systemVendor", inv)
	}
	if !reflect.DeepEqual(u.Object["spec"], realAgent().Object["spec"]) {
		t.Errorf("spec changed: %v", u.Object["spec"])
	}
}

// A Machine keeps its metadata only, at every version the operator reads; an AgentMachine (read for its
// spec and status) loses only its managedFields.
func TestCacheTransformNarrowsMachinesToMetadata(t *testing.T) {
	for _, v := range agents.MachineVersions {
		m := agents.New(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: v, Kind: "Machine"})
		m.SetNamespace("clusters-hc")
		m.SetName("np-abc")
		m.SetAnnotations(map[string]string{agents.AnnotationNodePool: "clusters/np"})
		m.SetFinalizers([]string{"machine.cluster.x-k8s.io"})
		now := metav1.Now()
		m.SetDeletionTimestamp(&now)
		m.SetManagedFields(managed)
		m.Object["spec"] = map[string]any{"clusterName": "hc", "providerID": "agent://x"}
		m.Object["status"] = map[string]any{"phase": "Running"}
		wantMeta := m.DeepCopy()
		wantMeta.SetManagedFields(nil)
		out, _ := cacheTransform(m)
		u := out.(*unstructured.Unstructured)
		if len(u.Object) != 3 || !reflect.DeepEqual(u.Object["metadata"], wantMeta.Object["metadata"]) || u.GetAPIVersion() != "cluster.x-k8s.io/"+v {
			t.Errorf("%s: Machine after the transform = %v, want apiVersion, kind and metadata without managedFields", v, u.Object)
		}
	}
	am := agents.New(agents.AgentMachineGVK)
	am.SetName("am")
	am.SetManagedFields(managed)
	am.Object["spec"] = map[string]any{"agentLabelSelector": map[string]any{"matchLabels": map[string]any{"a": "b"}}}
	am.Object["status"] = map[string]any{"agentRef": map[string]any{"name": "x", "namespace": "y"}, "ready": true}
	want := am.DeepCopy()
	want.SetManagedFields(nil)
	if out, _ := cacheTransform(am); !reflect.DeepEqual(out, want) {
		t.Errorf("AgentMachine after the transform = %v, want %v", out, want)
	}
}

// Typed and metadata-only objects lose their managedFields; tombstones pass through.
func TestCacheTransformStripsManagedFieldsOfEveryKind(t *testing.T) {
	va := &afv1.VsphereAgent{ObjectMeta: metav1.ObjectMeta{Name: "va", ManagedFields: managed}}
	va.Status.VM.AgentName = "a"
	cm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "ca", ManagedFields: managed}}
	for _, o := range []interface {
		GetManagedFields() []metav1.ManagedFieldsEntry
	}{va, cm} {
		out, err := cacheTransform(o)
		if err != nil || out != o || o.GetManagedFields() != nil {
			t.Errorf("%T: managedFields %v after the transform (err %v)", o, o.GetManagedFields(), err)
		}
	}
	if va.Status.VM.AgentName != "a" {
		t.Error("a typed object's status changed")
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/x", Obj: va}
	if out, err := cacheTransform(tomb); err != nil || !reflect.DeepEqual(out, tomb) {
		t.Errorf("tombstone: %v, %v", out, err)
	}
}

// The manager's cache options install the transform, and an OperatorGroup's namespaces.
func TestCacheOptions(t *testing.T) {
	o := cacheOptions([]string{"a", "b"})
	if o.DefaultTransform == nil || len(o.DefaultNamespaces) != 2 || len(o.ByObject) != 0 {
		t.Errorf("cacheOptions = %+v", o)
	}
	if o := cacheOptions(nil); o.DefaultNamespaces != nil || o.DefaultTransform == nil {
		t.Errorf("cacheOptions(nil) = %+v", o)
	}
}
