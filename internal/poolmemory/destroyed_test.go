package poolmemory

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A destroyed VM is remembered for its pool for LateRegistrationWindow, until its late Agent is dealt
// with; a VM of unknown MAC is not remembered (nothing could match it).
func TestDestroyedHosts(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	macs := func(hs []DestroyedHost) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.MAC)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		setup func(d *DestroyedHosts)
		pool  types.NamespacedName
		at    time.Duration
		want  []string
	}{
		{"recorded, within the window", func(d *DestroyedHosts) { d.Add(a, DestroyedHost{MAC: "m1", At: t0}) }, a, LateRegistrationWindow - time.Second, []string{"m1"}},
		{"at the window's end: forgotten", func(d *DestroyedHosts) { d.Add(a, DestroyedHost{MAC: "m1", At: t0}) }, a, LateRegistrationWindow, nil},
		{"another pool's", func(d *DestroyedHosts) { d.Add(b, DestroyedHost{MAC: "m1", At: t0}) }, a, 0, nil},
		{"unknown MAC: not recorded", func(d *DestroyedHosts) { d.Add(a, DestroyedHost{At: t0}) }, a, 0, nil},
		{"forgotten once dealt with, the others kept", func(d *DestroyedHosts) {
			d.Add(a, DestroyedHost{MAC: "m1", BIOSUUID: "u1", At: t0})
			d.Add(a, DestroyedHost{MAC: "m2", BIOSUUID: "u2", At: t0})
			d.Forget(a, DestroyedHost{MAC: "m1", BIOSUUID: "u1"})
		}, a, 0, []string{"m2"}},
		{"a MAC reused by a static-IP lease: only the VM dealt with is forgotten", func(d *DestroyedHosts) {
			d.Add(a, DestroyedHost{MAC: "m1", BIOSUUID: "u1", At: t0})
			d.Add(a, DestroyedHost{MAC: "m1", BIOSUUID: "u2", At: t0})
			d.Forget(a, DestroyedHost{MAC: "m1", BIOSUUID: "u1"})
		}, a, 0, []string{"m1"}},
		{"an older one expires, a newer one stays", func(d *DestroyedHosts) {
			d.Add(a, DestroyedHost{MAC: "old", At: t0})
			d.Add(a, DestroyedHost{MAC: "new", At: t0.Add(10 * time.Minute)})
		}, a, LateRegistrationWindow + time.Minute, []string{"new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &DestroyedHosts{}
			tc.setup(d)
			got := macs(d.Of(tc.pool, t0.Add(tc.at)))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Of = %v, want %v", got, tc.want)
			}
		})
	}
	var none *DestroyedHosts // the zero Options: nothing remembered, nothing panics
	none.Add(a, DestroyedHost{MAC: "m1", At: t0})
	none.Forget(a, DestroyedHost{MAC: "m1"})
	if got := none.Of(a, t0); got != nil {
		t.Fatalf("nil DestroyedHosts returned %v", got)
	}
}
