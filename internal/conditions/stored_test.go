package conditions

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func TestSameAsStored(t *testing.T) {
	stored := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	inMemory := metav1.NewTime(stored.Add(705 * time.Millisecond))
	iso := func(checked metav1.Time) *afv1.VsphereAgentPoolStatus {
		return &afv1.VsphereAgentPoolStatus{ISO: &afv1.ISOStatus{Path: "[ds] a.iso", CheckedAt: &checked}}
	}
	cases := []struct {
		name string
		a, b *afv1.VsphereAgentPoolStatus
		want bool
	}{
		{"equal", iso(stored), iso(stored), true},
		{"a time that differs below the second the API server keeps", iso(stored), iso(inMemory), true},
		{"a time a second later", iso(stored), iso(metav1.NewTime(stored.Add(time.Second))), false},
		{"a counter", &afv1.VsphereAgentPoolStatus{VMs: 1}, &afv1.VsphereAgentPoolStatus{VMs: 2}, false},
		{"an empty list and none", &afv1.VsphereAgentPoolStatus{OwnedVMs: []afv1.OwnedVM{}}, &afv1.VsphereAgentPoolStatus{}, true},
	}
	for _, tc := range cases {
		if got := SameAsStored(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameAsStored = %t, want %t", tc.name, got, tc.want)
		}
	}
}
