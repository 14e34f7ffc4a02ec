package preflight

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

func TestSelectorMismatch(t *testing.T) {
	pool := &afv1.VsphereAgentPool{}
	pool.Name = "workers"
	pool.Spec.Agent.Labels = map[string]afv1.LabelValue{"agent-forge.containeroo.ch/nodepool": "demo-workers", "tier": "general"}
	have := poolspec.AgentLabels(pool)
	in := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	tests := []struct {
		name    string
		sel     *metav1.LabelSelector
		wantBad string // substring of the mismatch message; "" = matches
	}{
		{"no selector selects every Agent", nil, ""},
		{"empty selector selects every Agent", &metav1.LabelSelector{}, ""},
		{"matchLabels on the user's label", &metav1.LabelSelector{MatchLabels: map[string]string{"agent-forge.containeroo.ch/nodepool": "demo-workers"}}, ""},
		{"matchLabels on the role label the operator adds", &metav1.LabelSelector{MatchLabels: map[string]string{"hypershift.openshift.io/nodepool-role": "worker"}}, ""},
		{"matchLabels on the pool label the operator adds", &metav1.LabelSelector{MatchLabels: map[string]string{afv1.LabelPool: "workers"}}, ""},
		{"matchLabels with another value", &metav1.LabelSelector{MatchLabels: map[string]string{"agent-forge.containeroo.ch/nodepool": "other"}}, "agent-forge.containeroo.ch/nodepool=other"},
		{"matchLabels on a label nobody sets", &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}, "zone=a"},
		{"matchExpressions In satisfied", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("tier", metav1.LabelSelectorOpIn, "general", "gpu")}}, ""},
		{"matchExpressions In unsatisfied", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("tier", metav1.LabelSelectorOpIn, "gpu")}}, "tier in (gpu)"},
		{"matchExpressions Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("tier", metav1.LabelSelectorOpExists)}}, ""},
		{"matchExpressions DoesNotExist violated", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("tier", metav1.LabelSelectorOpDoesNotExist)}}, "!tier"},
		{"matchExpressions NotIn satisfied", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("tier", metav1.LabelSelectorOpNotIn, "gpu")}}, ""},
		{"invalid operator", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("tier", "Near", "x")}}, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := selectorMismatch(tt.sel, have)
			switch {
			case tt.wantBad == "" && got != "":
				t.Fatalf("mismatch %q, want a match", got)
			case tt.wantBad != "" && !strings.Contains(got, tt.wantBad):
				t.Fatalf("mismatch %q, want it to name %q", got, tt.wantBad)
			}
		})
	}
}
