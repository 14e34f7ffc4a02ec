package ejection

import (
	"reflect"
	"testing"
)

func TestPrunedFields(t *testing.T) {
	all := recoveryFields()
	props := func(names ...string) map[string]any {
		m := map[string]any{}
		for _, n := range names {
			m[n] = map[string]any{"type": "string"}
		}
		return m
	}
	version := func(status map[string]any) map[string]any {
		return map[string]any{"name": "v1alpha1", "schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "properties": map[string]any{"status": status}}}}
	}
	for _, tc := range []struct {
		name    string
		version map[string]any
		want    []string
	}{
		{"current schema", version(map[string]any{"properties": map[string]any{"isoEjection": map[string]any{"properties": props(all...)}}}), nil},
		{"no isoEjection", version(map[string]any{"properties": map[string]any{"vm": map[string]any{}}}), all},
		{"older record without agentUID and questionID", version(map[string]any{"properties": map[string]any{"isoEjection": map[string]any{
			"properties": props(without(all, "agentUID", "questionID")...)}}}), []string{"agentUID", "questionID"}},
		{"preserve-unknown-fields on the record", version(map[string]any{"properties": map[string]any{"isoEjection": map[string]any{
			"x-kubernetes-preserve-unknown-fields": true}}}), nil},
		{"preserve-unknown-fields on status", version(map[string]any{"x-kubernetes-preserve-unknown-fields": true}), nil},
		{"no status schema", map[string]any{"name": "v1alpha1"}, []string{"(all: no status schema)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := prunedFields(tc.version); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("prunedFields = %v, want %v", got, tc.want)
			}
		})
	}
	for _, f := range []string{"instanceUUID", "ownerUID", "datacenter", "deviceKey", "isoPath", "startedAt", "taskRef", "questionID", "agentUID"} {
		if !contains(all, f) {
			t.Errorf("recovery field %s is not guarded (fields: %v)", f, all)
		}
	}
}

func without(all []string, drop ...string) []string {
	var out []string
	for _, f := range all {
		if !contains(drop, f) {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
