package validation

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// publishedPoolYAML uses every field of the published v1alpha1 API that a user writes (SPEC §3), and
// none of the fields added later.
const publishedPoolYAML = `
apiVersion: agent-forge.containeroo.ch/v1alpha1
kind: VsphereAgentPool
metadata:
  name: published
  namespace: default
spec:
  hostedClusterRef:
    name: demo
  nodePoolRef:
    name: demo-workers
  infraEnvRef:
    name: demo
  controlPlaneNamespace: clusters-demo
  vsphere:
    credentialsSecretRef:
      name: vsphere-credentials
      namespace: clusters
    datacenter: DC0
    datastoreCluster: DC0_POD0
    isoDatastore: LocalDS_0
    resourcePool: /DC0/host/DC0_C0/Resources
    folder: /DC0/vm/demo
    network: VM Network
    vmTags:
    - openshift/worker
    - demo
  template:
    namePrefix: demo-worker
  agent:
    role: worker
    labels:
      example.com/pool: demo-workers
      tier: general
    approve: true
  iso:
    checkInterval: 30m
    retainVersions: 3
    pathPrefix: agent-forge/clusters/demo
  cleanupPolicy: Retain
`

// minimalPoolYAML has only the required fields.
const minimalPoolYAML = `
apiVersion: agent-forge.containeroo.ch/v1alpha1
kind: VsphereAgentPool
metadata:
  name: minimal
  namespace: default
spec:
  hostedClusterRef: {name: demo}
  nodePoolRef: {name: demo-workers}
  infraEnvRef: {name: demo}
  controlPlaneNamespace: clusters-demo
  vsphere:
    credentialsSecretRef: {name: vsphere-credentials}
    datacenter: DC0
    datastoreCluster: DC0_POD0
    isoDatastore: LocalDS_0
    network: VM Network
  agent:
    labels: {example.com/pool: demo-workers}
`

// schemaDefaults are every default of the pool spec, by path below spec.
var schemaDefaults = map[string]interface{}{
	"vsphere.guestID":            "rhel9_64Guest",
	"vsphere.scsiType":           "pvscsi",
	"vsphere.firmware":           "efi",
	"vsphere.networkAdapterType": "vmxnet3",
	"vsphere.diskEagerlyScrub":   false,
	"template.numCPUs":           int64(4),
	"template.memoryMiB":         int64(16384),
	"template.diskGiB":           int64(100),
	"agent.role":                 "worker",
	"agent.approve":              true,
	"iso.checkInterval":          "1h",
	"iso.retainVersions":         int64(2),
	"iso.allowPlainHTTP":         false,
	"iso.ejectAfterInstall":      false,
	"iso.recoverDiscoveryBoot":   false, // opt-in: a worker that booted discovery again is reported, not reset
	"iso.replaceOutdatedVMs":     true,  // opt-out: outdated unbound VMs are replaced unless a pool says false
	"iso.maxSize":                "8Gi",
	"cleanupPolicy":              "Delete",
	"registrationTimeout":        "20m",
	"paused":                     false,
	"adoption":                   "Disabled", // upstream VMs are adopted only when a pool opts in (docs/migration.md)
	"standby":                    int64(0),   // no warm standby unless a pool asks (docs/standby.md)
}

func TestPublishedPoolIsAcceptedUnchangedWithDefaults(t *testing.T) {
	written := objectFromYAML(t, publishedPoolYAML)
	stored := createAndRead(t, written)
	writtenSpec := written.Object["spec"].(map[string]interface{})
	storedSpec := stored.Object["spec"].(map[string]interface{})

	// Every field the user wrote comes back byte for byte.
	want := mustJSON(t, writtenSpec)
	got := mustJSON(t, project(storedSpec, writtenSpec))
	if !bytes.Equal(want, got) {
		t.Fatalf("written fields changed:\nwrote %s\nread  %s", want, got)
	}

	// Everything else that came back is a schema default, with its documented value.
	added := leaves(storedSpec, "")
	for path := range leaves(writtenSpec, "") {
		delete(added, path)
	}
	wantAdded := map[string]interface{}{}
	for path, value := range schemaDefaults {
		if _, wrote := leaves(writtenSpec, "")[path]; !wrote {
			wantAdded[path] = value
		}
	}
	if !reflect.DeepEqual(added, wantAdded) {
		t.Fatalf("fields added by the server:\n got %v\nwant %v", sortedKeys(added), sortedKeys(wantAdded))
	}
	assertTypedDefaults(t, stored.GetName(), func(p *afv1.VsphereAgentPool) {
		if p.Spec.ISO.CheckInterval.Duration != 30*time.Minute || p.Spec.ISO.RetainVersions != 3 {
			t.Errorf("typed iso = %+v", p.Spec.ISO)
		}
		if p.Spec.CleanupPolicy != afv1.CleanupPolicyRetain || len(p.Spec.VSphere.VMTags) != 2 {
			t.Errorf("typed spec = %+v", p.Spec)
		}
	})
}

func TestMinimalPoolGetsEveryDefault(t *testing.T) {
	stored := createAndRead(t, objectFromYAML(t, minimalPoolYAML))
	storedSpec := stored.Object["spec"].(map[string]interface{})
	got := leaves(storedSpec, "")
	for path, want := range schemaDefaults {
		if !reflect.DeepEqual(got[path], want) {
			t.Errorf("spec.%s = %#v, want %#v", path, got[path], want)
		}
	}
	assertTypedDefaults(t, stored.GetName(), func(p *afv1.VsphereAgentPool) {
		if p.Spec.ISO.CheckInterval.Duration != time.Hour || p.Spec.ISO.RetainVersions != 2 {
			t.Errorf("typed iso = %+v", p.Spec.ISO)
		}
		if p.Spec.CleanupPolicy != afv1.CleanupPolicyDelete || p.Spec.Limits != nil {
			t.Errorf("typed spec = %+v", p.Spec)
		}
	})
}

// assertTypedDefaults reads the pool through the Go types, as the controllers will.
func assertTypedDefaults(t *testing.T, name string, extra func(*afv1.VsphereAgentPool)) {
	t.Helper()
	pool := &afv1.VsphereAgentPool{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pool); err != nil {
		t.Fatal(err)
	}
	s := pool.Spec
	if s.VSphere.GuestID != "rhel9_64Guest" || s.VSphere.SCSIType != "pvscsi" || s.VSphere.Firmware != "efi" ||
		s.VSphere.NetworkAdapterType != "vmxnet3" || s.VSphere.DiskEagerlyScrub {
		t.Errorf("typed vsphere defaults = %+v", s.VSphere)
	}
	if s.Template.NumCPUs != 4 || s.Template.MemoryMiB != 16384 || s.Template.DiskGiB != 100 {
		t.Errorf("typed template defaults = %+v", s.Template)
	}
	if s.Agent.Role != "worker" || s.Agent.Approve == nil || !*s.Agent.Approve {
		t.Errorf("typed agent defaults = %+v", s.Agent)
	}
	if s.ISO.EjectAfterInstall || s.Paused || s.RegistrationTimeout == nil || s.RegistrationTimeout.Duration != 20*time.Minute {
		t.Errorf("typed defaults: iso=%+v paused=%v registrationTimeout=%v", s.ISO, s.Paused, s.RegistrationTimeout)
	}
	extra(pool)
}

func createAndRead(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if err := k8s.Create(ctx, obj.DeepCopy()); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
	// Deleted afterwards so the test can run again on the same API server (go test -count=N).
	t.Cleanup(func() { _ = k8s.Delete(ctx, obj.DeepCopy()) })
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(obj.GroupVersionKind())
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

// project keeps only the parts of got whose keys appear in shape (recursively for objects); lists
// and scalars are kept whole.
func project(got, shape map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for k, s := range shape {
		g, ok := got[k]
		if !ok {
			continue
		}
		sm, sIsMap := s.(map[string]interface{})
		gm, gIsMap := g.(map[string]interface{})
		if sIsMap && gIsMap && !strings.HasSuffix(k, "labels") {
			out[k] = project(gm, sm)
			continue
		}
		out[k] = g
	}
	return out
}

// leaves flattens an object to dotted paths of its scalar and list values; maps of labels count as one
// leaf so their keys (which contain dots) stay whole.
func leaves(obj map[string]interface{}, prefix string) map[string]interface{} {
	out := map[string]interface{}{}
	for k, v := range obj {
		path := prefix + k
		if m, ok := v.(map[string]interface{}); ok && k != "labels" {
			for p, lv := range leaves(m, path+".") {
				out[p] = lv
			}
			continue
		}
		out[path] = v
	}
	return out
}

func mustJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		keys = append(keys, k+"="+string(mustJSONNoT(v)))
	}
	sort.Strings(keys)
	return keys
}

func mustJSONNoT(v interface{}) []byte {
	raw, _ := json.Marshal(v)
	return raw
}
