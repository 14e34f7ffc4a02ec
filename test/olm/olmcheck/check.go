package olmcheck

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	apivalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// Check lists every stored object of next's kind, for each version old and next both serve, and
// validates it against next's schema the way OLM does. It returns one line per invalid object (OLM
// stops at the first; all are listed here so a failure says everything at once).
func Check(ctx context.Context, t T, c client.Client, old, next *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	var problems []string
	for _, v := range commonServedVersions(old, next) {
		validator, _, err := apivalidation.NewSchemaValidator(internalSchema(t, v.Schema))
		if err != nil {
			t.Fatalf("creating the validator of %s %s: %v", next.Name, v.Name, err)
		}
		for _, obj := range ListStored(ctx, t, c, next, v.Name) {
			if errs := apivalidation.ValidateCustomResource(field.NewPath(""), obj.UnstructuredContent(), validator); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s %s/%s: updated validation is too restrictive: %v",
					obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName(), errs.ToAggregate()))
			}
		}
	}
	return problems
}

// StrictCheck goes beyond OLM: each stored object must also pass next's CEL rules (transition rules
// need an old object and are skipped) and its list-type rules (sets without duplicates, map keys
// unique), what the API server applies when the object is next written whole.
func StrictCheck(ctx context.Context, t T, c client.Client, old, next *apiextensionsv1.CustomResourceDefinition) []string {
	t.Helper()
	var problems []string
	for _, v := range commonServedVersions(old, next) {
		s, err := structuralschema.NewStructural(internalSchema(t, v.Schema))
		if err != nil {
			t.Fatalf("structural schema of %s %s: %v", next.Name, v.Name, err)
		}
		celValidator := cel.NewValidator(s, true, celPerCallLimit)
		for _, obj := range ListStored(ctx, t, c, next, v.Name) {
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

// CheckAll is Check over a set of CRDs by name: every CRD of next against the one of that name in old
// (a CRD old lacks is new, and OLM creates it without a check).
func CheckAll(ctx context.Context, t T, c client.Client, old, next map[string]*apiextensionsv1.CustomResourceDefinition, strict bool) []string {
	t.Helper()
	var problems []string
	for name, crd := range next {
		if old[name] == nil {
			continue
		}
		problems = append(problems, Check(ctx, t, c, old[name], crd)...)
		if strict {
			problems = append(problems, StrictCheck(ctx, t, c, old[name], crd)...)
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

func internalSchema(t T, v *apiextensionsv1.CustomResourceValidation) *apiextensions.JSONSchemaProps {
	t.Helper()
	out := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, out, nil); err != nil {
		t.Fatalf("converting the schema: %v", err)
	}
	return out.OpenAPIV3Schema
}

// ListStored lists every object of crd's kind at version as the API server serves it now.
func ListStored(ctx context.Context, t T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, version string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	if err := c.List(ctx, list); err != nil {
		t.Fatalf("listing %s: %v", crd.Spec.Names.Plural, err)
	}
	return list.Items
}
