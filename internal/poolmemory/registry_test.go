package poolmemory

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// TestRegistryForgetsAPoolInEveryRecord: one Forget reaches every registered record; Holding names the
// records that still hold the pool, so a record whose ForgetPool misses something is named.
func TestRegistryForgetsAPoolInEveryRecord(t *testing.T) {
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	destroyed := &DestroyedHosts{}
	own := NewOwnWrites[*afv1.VsphereAgentPool]()
	stuck := map[types.NamespacedName]bool{a: true, b: true} // a record that forgets nothing
	r := NewRegistry()
	r.Register("destroyed", destroyed)
	r.Register("own", Funcs{Forget: own.Forget, Holds: own.Holds})
	r.Register("stuck", Funcs{Forget: func(types.NamespacedName) {}, Holds: func(p types.NamespacedName) bool { return stuck[p] }})
	for _, p := range []types.NamespacedName{a, b} {
		destroyed.Add(p, DestroyedHost{VM: p.Name + "-vm", MAC: "00:50:56:00:00:01", At: now})
		pool := &afv1.VsphereAgentPool{}
		pool.Namespace, pool.Name, pool.ResourceVersion = p.Namespace, p.Name, "2"
		own.Wrote("1", pool)
	}
	if got, want := r.Names(), []string{"destroyed", "own", "stuck"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	r.Forget(a)
	if got := r.Holding(a); !slices.Equal(got, []string{"stuck"}) {
		t.Errorf("holding pool a after Forget: %v; want only the record that forgets nothing", got)
	}
	if got := r.Holding(b); !slices.Equal(got, []string{"destroyed", "own", "stuck"}) {
		t.Errorf("holding pool b: %v; want every record", got)
	}
}
