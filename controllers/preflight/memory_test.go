package preflight

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// TestCheckerForgetsADeletedPool: the placement verdicts are the Checker's per-pool record (registered
// by the pool controller with its poolmemory Registry); ForgetPool drops a deleted pool's, keeps another's.
func TestCheckerForgetsADeletedPool(t *testing.T) {
	c := &Checker{}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	a := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}}
	ab := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a-b", UID: "uid-ab"}}
	c.placement.done(placementMemoKey(a), placementCheck{generation: 1, at: now})
	c.placement.done(placementMemoKey(ab), placementCheck{generation: 1, at: now})
	keyA, keyAB := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "a-b"}
	if !c.HoldsPool(keyA) || !c.HoldsPool(keyAB) {
		t.Fatal("the placement verdicts are not remembered")
	}
	c.ForgetPool(keyA)
	if c.HoldsPool(keyA) {
		t.Error("pool a's placement verdict is still remembered after ForgetPool")
	}
	if !c.HoldsPool(keyAB) {
		t.Error("forgetting pool a dropped pool a-b's verdict (a prefix without the separator)")
	}
}
