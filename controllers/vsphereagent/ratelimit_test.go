package vsphereagent

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestJitteredBackoff: the n-th consecutive failure waits min(5 ms·2ⁿ, 1000 s) plus jitter·half of it,
// per item; Forget starts over.
func TestJitteredBackoff(t *testing.T) {
	a, b := reconcile.Request{}, reconcile.Request{}
	b.Name = "b"
	for _, j := range []float64{0, 0.5, 0.999} {
		l := &jitteredBackoff{base: 5 * time.Millisecond, max: 1000 * time.Second, jitter: func() float64 { return j }}
		for n := 0; n < 64; n++ {
			d := 1000 * time.Second
			if n < 40 && 5*time.Millisecond<<n < d {
				d = 5 * time.Millisecond << n
			}
			if got, want := l.When(a), d+time.Duration(j*float64(d)/2); got != want {
				t.Fatalf("jitter %v, failure %d: %v, want %v", j, n, got, want)
			}
		}
		if l.NumRequeues(a) != 64 || l.NumRequeues(b) != 0 {
			t.Fatalf("requeues: %d, %d", l.NumRequeues(a), l.NumRequeues(b))
		}
		l.Forget(a)
		if got, want := l.When(a), 5*time.Millisecond+time.Duration(j*float64(5*time.Millisecond)/2); got != want {
			t.Fatalf("after Forget: %v, want %v", got, want)
		}
	}
}
