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
	// Every owned kind has an example except the internal VsphereAgent: the pool controller creates those, one
	// per VM, and one applied by hand would make the operator create a VM outside the planner.
	internal := b.csv.Metadata.Annotations["operators.operatorframework.io/internal-objects"]
	for kind, seen := range kinds {
		switch {
		case kind == "VsphereAgent" && seen:
			t.Errorf("alm-examples holds a VsphereAgent: applying it would create a VM outside the pool's planner")
		case kind == "VsphereAgent":
			if !strings.Contains(internal, "vsphereagents.agent-forge.containeroo.ch") {
				t.Errorf("VsphereAgent has no example, so it must be an internal object (internal-objects: %s)", internal)
			}
		case !seen:
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
