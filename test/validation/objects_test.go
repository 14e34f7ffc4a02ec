package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// validPoolYAML is a pool that the API server accepts; each invalid case breaks exactly one thing in it.
const validPoolYAML = `
apiVersion: agent-forge.containeroo.ch/v1alpha1
kind: VsphereAgentPool
metadata:
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
    labels:
      example.com/pool: demo-workers
`

const validAgentYAML = `
apiVersion: agent-forge.containeroo.ch/v1alpha1
kind: VsphereAgent
metadata:
  namespace: default
spec:
  poolRef: {name: demo-workers}
`

var nameCounter atomic.Int64

// uniqueName gives every object its own name so cases never collide, even when they are accepted.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameCounter.Add(1))
}

// objectFromYAML parses a manifest into an unstructured object, so exactly the written fields are sent
// (a typed client would add zero values of non-pointer structs).
func objectFromYAML(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("parsing manifest: %v", err)
	}
	return &unstructured.Unstructured{Object: jsonValue(t, obj).(map[string]interface{})}
}

// jsonValue converts v into the JSON-compatible shape unstructured objects need (int64, not int).
func jsonValue(t *testing.T, v interface{}) interface{} {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %v: %v", v, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var out interface{}
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return toInt64(out)
}

func toInt64(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]interface{}:
		for k, e := range x {
			x[k] = toInt64(e)
		}
	case []interface{}:
		for i, e := range x {
			x[i] = toInt64(e)
		}
	}
	return v
}

// edit changes one field of an object, given as a dotted path below the object root.
type edit func(t *testing.T, obj *unstructured.Unstructured)

// set writes value at path, creating intermediate maps.
func set(path string, value interface{}) edit {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		t.Helper()
		if err := unstructured.SetNestedField(obj.Object, jsonValue(t, value), strings.Split(path, ".")...); err != nil {
			t.Fatalf("setting %s: %v", path, err)
		}
	}
}

// unset removes the field at path.
func unset(path string) edit {
	return func(_ *testing.T, obj *unstructured.Unstructured) {
		unstructured.RemoveNestedField(obj.Object, strings.Split(path, ".")...)
	}
}

// assertRefused checks that err is the API server's Invalid answer and that it names field: in the
// message and as the path of one of the status causes.
func assertRefused(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want refusal naming %s", field)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error naming %s, got %T: %v", field, err, err)
	}
	if !strings.Contains(err.Error(), field) {
		t.Fatalf("error does not name %s: %v", field, err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("error has no details: %v", err)
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field || strings.HasPrefix(cause.Field, field+"[") || strings.HasPrefix(cause.Field, field+".") {
			t.Logf("refused: %s", status.Status().Message)
			return
		}
	}
	t.Fatalf("no cause has field %s: %+v", field, status.Status().Details.Causes)
}

// labels returns n distinct valid labels.
func labels(n int) map[string]interface{} {
	out := map[string]interface{}{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("example.com/l%d", i)] = "v"
	}
	return out
}

// tags returns n distinct valid vSphere tag names.
func tags(n int) []interface{} {
	out := make([]interface{}, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("cat/tag%d", i))
	}
	return out
}
