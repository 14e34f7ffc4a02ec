package olm

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestALMExamplesAreValid creates every alm-examples object (server-side dry run) against the bundled CRDs
// on a real API server, so OpenAPI bounds and CEL rules judge them exactly as a cluster would.
func TestALMExamplesAreValid(t *testing.T) {
	b := loadCurrentBundle(t)
	var examples []map[string]any
	if err := json.Unmarshal([]byte(b.csv.Metadata.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("alm-examples is not a JSON list of objects: %v", err)
	}
	kinds := map[string]bool{}
	for _, o := range b.csv.Spec.CustomResourceDefinitions.Owned {
		kinds[o.Kind] = false
	}

	c := startAPIServerWith(t, b.crds)
	ctx := t.Context()
	for _, ex := range examples {
		obj := &unstructured.Unstructured{Object: ex}
		kinds[obj.GetKind()] = true
		ns := obj.GetNamespace()
		if ns == "" {
			ns = "default"
			obj.SetNamespace(ns)
		}
		ensureNamespace(ctx, t, c, ns)
		if err := c.Create(ctx, obj, client.DryRunAll); err != nil {
			t.Errorf("alm-example %s %s is refused by the bundled CRD: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	// Every owned kind has an example. The VsphereAgent's only documents the shape: the kind must be an internal
	// object (no console form), and the controller ignores one applied by hand (controllers spec "A VsphereAgent
	// applied by hand": no VM, NotCreatedByPool).
	internal := b.csv.Metadata.Annotations["operators.operatorframework.io/internal-objects"]
	if !strings.Contains(internal, "vsphereagents.agent-forge.containeroo.ch") {
		t.Errorf("VsphereAgent must be an internal object (internal-objects: %s)", internal)
	}
	for _, kind := range []string{"VsphereAgentPool", "VsphereAgent"} {
		if !kinds[kind] {
			t.Errorf("alm-examples has no example of owned kind %s", kind)
		}
	}

	// The same server refuses a broken pool, so the dry runs above really went through validation.
	for _, ex := range examples {
		obj := &unstructured.Unstructured{Object: ex}
		if obj.GetKind() != "VsphereAgentPool" {
			continue
		}
		bad := obj.DeepCopy()
		if err := unstructured.SetNestedStringMap(bad.Object, map[string]string{"agent-forge.containeroo.ch/pool": "x"}, "spec", "agent", "labels"); err != nil {
			t.Fatal(err)
		}
		err := c.Create(ctx, bad, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "spec.agent.labels") {
			t.Errorf("a pool setting an operator-owned Agent label was not refused by CEL: %v", err)
		}
	}
}
