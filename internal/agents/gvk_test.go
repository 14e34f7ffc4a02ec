package agents

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUseServedMachineVersion(t *testing.T) {
	defer machineGVK.Store(nil)
	for _, tc := range []struct {
		name   string
		served []string
		want   string // "" = error
	}{
		{"CAPI v1.11+ serves both: v1beta2, no conversion webhook round trip", []string{"v1beta1", "v1beta2"}, "v1beta2"},
		{"older hub: v1beta1 only", []string{"v1beta1"}, "v1beta1"},
		{"v1beta2 only (v1beta1 removed)", []string{"v1beta2"}, "v1beta2"},
		{"no Machine CRD", nil, ""},
		{"an unknown version only", []string{"v1alpha4"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			machineGVK.Store(nil)
			var gvs []schema.GroupVersion
			for _, v := range tc.served {
				gvs = append(gvs, schema.GroupVersion{Group: "cluster.x-k8s.io", Version: v})
			}
			mapper := meta.NewDefaultRESTMapper(gvs)
			for _, gv := range gvs {
				mapper.Add(gv.WithKind("Machine"), meta.RESTScopeNamespace)
			}
			got, err := UseServedMachineVersion(mapper)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				if MachineGVK().Version != MachineVersions[0] {
					t.Errorf("MachineGVK() = %v after a failed lookup, want the preferred default", MachineGVK())
				}
				return
			}
			if err != nil || got.Version != tc.want || MachineGVK() != got {
				t.Fatalf("got %v (MachineGVK %v), err %v; want %s", got, MachineGVK(), err, tc.want)
			}
		})
	}
}
