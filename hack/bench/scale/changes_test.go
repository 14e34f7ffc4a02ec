package main

import (
	"reflect"
	"sort"
	"testing"
)

func TestDiffFields(t *testing.T) {
	cond := func(typ, status, at string) map[string]any {
		return map[string]any{"type": typ, "status": status, "lastTransitionTime": at}
	}
	cases := []struct {
		name string
		a, b map[string]any
		want []string
	}{
		{name: "same", a: map[string]any{"status": map[string]any{"phase": "Bound"}}, b: map[string]any{"status": map[string]any{"phase": "Bound"}}},
		{name: "leaf", a: map[string]any{"status": map[string]any{"phase": "Creating"}}, b: map[string]any{"status": map[string]any{"phase": "Bound"}},
			want: []string{"status.phase"}},
		{name: "added and removed", a: map[string]any{"status": map[string]any{"old": 1}}, b: map[string]any{"status": map[string]any{"new": 1}},
			want: []string{"status.new", "status.old"}},
		{name: "conditions by type",
			a:    map[string]any{"status": map[string]any{"conditions": []any{cond("Ready", "False", "t1"), cond("Bound", "False", "t1")}}},
			b:    map[string]any{"status": map[string]any{"conditions": []any{cond("Bound", "True", "t2"), cond("Ready", "False", "t1"), cond("Seen", "True", "t2")}}},
			want: []string{"status.conditions[Bound].lastTransitionTime", "status.conditions[Bound].status", "status.conditions[Seen]"}},
		{name: "plain list", a: map[string]any{"spec": map[string]any{"macs": []any{"a"}}}, b: map[string]any{"spec": map[string]any{"macs": []any{"a", "b"}}},
			want: []string{"spec.macs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := map[string]bool{}
			diffFields(c.a, c.b, "", out)
			var got []string
			for p := range out {
				got = append(got, p)
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("changed %q, want %q", got, c.want)
			}
		})
	}
}
