//go:build linux

package realolm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// refusedVersion is the version of the breaking bundle derived from the working tree's.
const refusedVersion = "0.2.1"

// breakingBundle derives from the working tree's bundle entry (cur, named from) a next version whose
// VsphereAgent CRD narrows status.vm.phase to drop Bound, a value every bound VM's VsphereAgent stores: the
// change OLM's CRD safety check exists for. Everything else is the working tree's bundle.
func breakingBundle(t *testing.T, cur map[string]any, from string) (map[string]any, string) {
	t.Helper()
	raw, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]any{}
	if err := json.Unmarshal(raw, &next); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(from, from[strings.LastIndex(from, ".v"):]) + ".v" + refusedVersion
	next["name"] = name
	narrowed := false
	props, _ := next["properties"].([]any)
	for _, p := range props {
		prop, _ := p.(map[string]any)
		value, _ := prop["value"].(map[string]any)
		switch prop["type"] {
		case "olm.package":
			value["version"] = refusedVersion
		case "olm.bundle.object":
			data, _ := value["data"].(string)
			obj := decodeObject(t, data)
			switch obj.GetKind() {
			case "ClusterServiceVersion":
				obj.SetName(name)
				must(t, unstructured.SetNestedField(obj.Object, refusedVersion, "spec", "version"))
				must(t, unstructured.SetNestedField(obj.Object, from, "spec", "replaces"))
			case "CustomResourceDefinition":
				if obj.GetName() == "vsphereagents.agent-forge.containeroo.ch" {
					narrowed = dropEnumValue(t, obj, "Bound", "status", "vm", "phase")
				}
			}
			b, err := json.Marshal(obj.Object)
			must(t, err)
			value["data"] = base64.StdEncoding.EncodeToString(b)
		}
	}
	if !narrowed {
		t.Fatal("the working tree's VsphereAgent CRD has no status.vm.phase enum with Bound to narrow")
	}
	return next, name
}

func decodeObject(t *testing.T, data string) *unstructured.Unstructured {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(data)
	must(t, err)
	obj := &unstructured.Unstructured{}
	must(t, obj.UnmarshalJSON(b))
	return obj
}

// dropEnumValue removes value from the enum at path (under each version's openAPIV3Schema properties).
func dropEnumValue(t *testing.T, crd *unstructured.Unstructured, value string, path ...string) bool {
	t.Helper()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	dropped := false
	for _, v := range versions {
		schema := []string{"schema", "openAPIV3Schema"}
		for _, p := range path {
			schema = append(schema, "properties", p)
		}
		vm, _ := v.(map[string]any)
		enum, ok, _ := unstructured.NestedSlice(vm, append(schema, "enum")...)
		if !ok || !slices.Contains(enum, any(value)) {
			continue
		}
		enum = slices.DeleteFunc(enum, func(e any) bool { return e == value })
		must(t, unstructured.SetNestedSlice(vm, enum, append(schema, "enum")...))
		dropped = true
	}
	must(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	return dropped
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// moveCatalog points the CatalogSource at a newly served catalog (a new channel head published).
func (w *olmWorld) moveCatalog(ctx context.Context, t *testing.T, addr string) {
	t.Helper()
	cs := &unstructured.Unstructured{}
	cs.SetGroupVersionKind(olmGVK("v1alpha1", "CatalogSource"))
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: catalogSourceName}, cs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cs.DeepCopy())
	must(t, unstructured.SetNestedField(cs.Object, addr, "spec", "address"))
	if err := w.c.Patch(ctx, cs, patch); err != nil {
		t.Fatalf("moving the CatalogSource to the new catalog: %v", err)
	}
}

// assertRefused waits until OLM's InstallPlan for csvName fails and checks the refusal as OLM v0.46.0 writes
// it: the catalog operator's CRD step (step.go, the stepper of a CRD that exists) runs
// validateV1CRDCompatibility, whose validateExistingCRs returns "error validating <GVK> \"<ns/name>\": updated
// validation is too restrictive: ..." for the first stored object the new schema rejects; the step wraps it
// as "error validating existing CRs against new CRD's schema for \"<crd>\": ..."; transitionInstallPlanState
// retries until --install-plan-retry-timeout, then sets phase Failed and condition Installed=False, reason
// InstallComponentFailed, with that message. It returns the InstallPlan's message.
func (w *olmWorld) assertRefused(ctx context.Context, t *testing.T, csvName, crd string, rejected []string) string {
	t.Helper()
	var ip *unstructured.Unstructured
	w.waitFor(ctx, t, installTimeout, "OLM's InstallPlan for "+csvName+" fails", func() (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(olmGVK("v1alpha1", "InstallPlan"))
		if err := w.c.List(ctx, list, client.InNamespace(operatorNamespace)); err != nil {
			return false, err
		}
		for i := range list.Items {
			names, _, _ := unstructured.NestedStringSlice(list.Items[i].Object, "spec", "clusterServiceVersionNames")
			if !slices.Contains(names, csvName) {
				continue
			}
			ip = &list.Items[i]
			phase, _, _ := unstructured.NestedString(ip.Object, "status", "phase")
			msg, _, _ := unstructured.NestedString(ip.Object, "status", "message")
			return phase == "Failed", fmt.Errorf("phase %q, message %q", phase, msg)
		}
		return false, fmt.Errorf("no InstallPlan for %s yet", csvName)
	})
	conds, _, _ := unstructured.NestedSlice(ip.Object, "status", "conditions")
	var installed map[string]any
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Installed" {
			installed = m
		}
	}
	if installed == nil || installed["status"] != "False" || installed["reason"] != "InstallComponentFailed" {
		t.Fatalf("the failed InstallPlan's Installed condition is %v; want False, reason InstallComponentFailed", installed)
	}
	msg, _ := installed["message"].(string)
	for _, want := range append([]string{
		fmt.Sprintf("error validating existing CRs against new CRD's schema for %q", crd),
		"updated validation is too restrictive",
	}, rejected...) {
		if !strings.Contains(msg, want) {
			t.Errorf("OLM's refusal does not say %q:\n%s", want, msg)
		}
	}
	return msg
}
