package olm

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apivalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// The OLM check, reproduced. Before OLM's catalog operator replaces a CRD that already exists it
// validates every stored object of each version served before and after against the new CRD's schema
// (operator-lifecycle-manager pkg/controller/operators/catalog: validateV1CRDCompatibility, then
// validateExistingCRs). Its module pins other Kubernetes versions than ours and the functions are
// unexported, so the rule is rebuilt here from the same apiextensions-apiserver calls: the v1 schema
// converted to the internal one, apiserver/validation.NewSchemaValidator, and ValidateCustomResource on
// each listed object. OLM checks the OpenAPI schema only: no CEL, no list types. One invalid object
// fails the InstallPlan ("updated validation is too restrictive").

// Cost limits of CEL validation in the API server (k8s.io/apiserver/pkg/apis/cel: PerCallLimit and
// RuntimeCELCostBudget), repeated here to keep k8s.io/apiserver an indirect dependency.
const (
	celPerCallLimit = 1000000
	celCostBudget   = 10000000
)

// olmCheck lists every stored object of next's kind, for each version old and next both serve, and
// validates it against next's schema the way OLM does. It returns one line per invalid object (OLM stops
// at the first; all are listed here so a failure says everything at once).
func olmCheck(ctx context.Context, t *testing.T, c client.Client, old, next *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	var problems []string
	for _, v := range commonServedVersions(old, next) {
		validator, _, err := apivalidation.NewSchemaValidator(internalSchema(t, v.Schema))
		if err != nil {
			t.Fatalf("creating the validator of %s %s: %v", next.Name, v.Name, err)
		}
		for _, obj := range listStored(ctx, t, c, next, v.Name) {
			if errs := apivalidation.ValidateCustomResource(field.NewPath(""), obj.UnstructuredContent(), validator); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s %s/%s: updated validation is too restrictive: %v",
					obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), errs.ToAggregate()))
			}
		}
	}
	return problems
}

// strictCheck goes beyond OLM: each stored object must also pass next's CEL rules (transition rules
// need an old object and are skipped) and its list-type rules (sets without duplicates, map keys
// unique), what the API server applies when the object is next written whole.
func strictCheck(ctx context.Context, t *testing.T, c client.Client, old, next *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	var problems []string
	for _, v := range commonServedVersions(old, next) {
		s, err := structuralschema.NewStructural(internalSchema(t, v.Schema))
		if err != nil {
			t.Fatalf("structural schema of %s %s: %v", next.Name, v.Name, err)
		}
		celValidator := cel.NewValidator(s, true, celPerCallLimit)
		for _, obj := range listStored(ctx, t, c, next, v.Name) {
			errs := listtype.ValidateListSetsAndMaps(nil, s, obj.Object)
			if celValidator != nil {
				celErrs, _ := celValidator.Validate(ctx, nil, s, obj.Object, nil, celCostBudget)
				errs = append(errs, celErrs...)
			}
			if len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s %s/%s: %v", obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), errs.ToAggregate()))
			}
		}
	}
	return problems
}

// commonServedVersions are the versions of next that old served too, as OLM pairs them.
func commonServedVersions(old, next *apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinitionVersion {
	served := map[string]bool{}
	for _, v := range old.Spec.Versions {
		served[v.Name] = served[v.Name] || v.Served
	}
	var out []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range next.Spec.Versions {
		if served[v.Name] && v.Served {
			out = append(out, v)
		}
	}
	return out
}

func internalSchema(t *testing.T, v *apiextensionsv1.CustomResourceValidation) *apiextensions.JSONSchemaProps {
	t.Helper()
	out := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, out, nil); err != nil {
		t.Fatal(err)
	}
	return out.OpenAPIV3Schema
}

// listStored lists every object of crd's kind at version as the API server serves it now.
func listStored(ctx context.Context, t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, version string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	if err := c.List(ctx, list); err != nil {
		t.Fatalf("listing %s: %v", crd.Spec.Names.Plural, err)
	}
	return list.Items
}

// loadCRDs reads the CustomResourceDefinitions of a multi-document YAML file, by name.
func loadCRDs(t *testing.T, elem ...string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, doc := range yamlDocs(t, elem...) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			t.Fatalf("%s: %v", strings.Join(elem, "/"), err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			t.Fatalf("%s: unexpected kind %q", strings.Join(elem, "/"), crd.Kind)
		}
		out[crd.Name] = crd
	}
	return out
}

// loadObjects reads the objects of a multi-document YAML file.
func loadObjects(t *testing.T, elem ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range yamlDocs(t, elem...) {
		data, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", strings.Join(elem, "/"), err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil { // integers as int64, as the API server returns them
			t.Fatalf("%s: %v", strings.Join(elem, "/"), err)
		}
		out = append(out, obj)
	}
	return out
}

func yamlDocs(t *testing.T, elem ...string) [][]byte {
	t.Helper()
	path, err := repoPath(append([]string{"test", "olm", "testdata"}, elem...)...)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(stripComments(doc)) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

func stripComments(doc string) string {
	var keep []string
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// uidPrefix marks a placeholder in the object fixtures: "uid:<Kind>/<name>" stands for the UID of that
// stored object, known only once it is created.
const uidPrefix = "uid:"

// resolveUIDs replaces every placeholder in v (a decoded YAML value) with the UID it names.
func resolveUIDs(t *testing.T, v any, uids map[string]string) any {
	t.Helper()
	switch x := v.(type) {
	case string:
		if ref, ok := strings.CutPrefix(x, uidPrefix); ok {
			uid, found := uids[ref]
			if !found {
				t.Fatalf("fixture names the UID of %s before it is stored", ref)
			}
			return uid
		}
	case map[string]any:
		for k, e := range x {
			x[k] = resolveUIDs(t, e, uids)
		}
	case []any:
		for i, e := range x {
			x[i] = resolveUIDs(t, e, uids)
		}
	}
	return v
}

// storeObjects creates each fixture object (status stripped, placeholders resolved) and then writes
// its status through the status subresource, as the upstream operator did; uids collects the UIDs. Each
// write is repeated until the server keeps every value of the fixture: right after a CRD update the API
// server may still serve the previous schema for a moment (and a fixture value the served schema does
// not know fails the test here rather than later).
func storeObjects(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured, uids map[string]string) {
	t.Helper()
	stored := make([]*unstructured.Unstructured, len(objs))
	for i, fixture := range objs {
		want := fixture.DeepCopy()
		delete(want.Object, "status")
		ensureNamespace(ctx, t, c, want.GetNamespace())
		want.Object = resolveUIDs(t, want.Object, uids).(map[string]any)
		untilKept(ctx, t, "spec of "+want.GetName(), want, func(ctx context.Context) (*unstructured.Unstructured, error) {
			probe := want.DeepCopy()
			return probe, c.Create(ctx, probe, client.DryRunAll)
		})
		obj := want.DeepCopy()
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("storing %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
		uids[obj.GetKind()+"/"+obj.GetName()] = string(obj.GetUID())
		stored[i] = obj
	}
	for i, fixture := range objs {
		status, ok := fixture.Object["status"]
		if !ok {
			continue
		}
		want := &unstructured.Unstructured{Object: map[string]any{"status": resolveUIDs(t, runtime.DeepCopyJSONValue(status), uids)}}
		obj := stored[i]
		untilKept(ctx, t, "status of "+obj.GetName(), want, func(ctx context.Context) (*unstructured.Unstructured, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return nil, err
			}
			obj.Object["status"] = runtime.DeepCopyJSONValue(want.Object["status"])
			return obj, c.Status().Update(ctx, obj)
		})
	}
}

// untilKept repeats write until the object it returns keeps every spec and status value of want.
func untilKept(ctx context.Context, t *testing.T, what string, want *unstructured.Unstructured, write func(context.Context) (*unstructured.Unstructured, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := write(ctx)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		lost := lostLeaves(want, got)
		last = strings.Join(lost, "; ")
		return len(lost) == 0, nil
	})
	if err != nil {
		t.Fatalf("the API server never kept the %s: %s", what, last)
	}
}

// leafValues flattens a decoded object into path -> scalar (lists by index), to compare what survives.
func leafValues(v any, prefix string, out map[string]any) map[string]any {
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			leafValues(e, prefix+"."+k, out)
		}
	case []any:
		for i, e := range x {
			leafValues(e, fmt.Sprintf("%s[%d]", prefix, i), out)
		}
	default:
		out[prefix] = fmt.Sprint(x)
	}
	return out
}

// lostLeaves lists the leaves of before (spec and status) that after lacks or changed.
func lostLeaves(before, after *unstructured.Unstructured) []string {
	var lost []string
	for _, part := range []string{"spec", "status"} {
		b := leafValues(before.Object[part], part, map[string]any{})
		a := leafValues(after.Object[part], part, map[string]any{})
		for path, want := range b {
			if got, ok := a[path]; !ok || got != want {
				lost = append(lost, fmt.Sprintf("%s: %v -> %v", path, want, got))
			}
		}
	}
	sort.Strings(lost)
	return lost
}
