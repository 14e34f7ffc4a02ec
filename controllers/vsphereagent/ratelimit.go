package vsphereagent

import (
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Retry delays of a VsphereAgent whose pass failed (a vSphere call refused or failed, a write refused):
// controller-runtime's defaults (5 ms · 2ⁿ up to 1000 s per object, at most 10/s overall after a burst
// of 100) plus jitter. A permanent fault (NoPermission, a full datastore) fails every VsphereAgent of a
// pool in the same pass; without jitter they would retry in lockstep for as long as it lasts.
const (
	vmRetryBase = 5 * time.Millisecond
	vmRetryMax  = 1000 * time.Second
)

// newVMRateLimiter is the VsphereAgent controller's rate limiter.
func newVMRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter[reconcile.Request](
		&jitteredBackoff{base: vmRetryBase, max: vmRetryMax, jitter: rand.Float64},
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// jitteredBackoff delays the n-th consecutive failure of an item by d = min(base·2ⁿ, max) plus a random
// [0, d/2). Forget (a successful pass) starts over.
type jitteredBackoff struct {
	base, max time.Duration
	jitter    func() float64 // [0, 1)

	mu       sync.Mutex
	failures map[reconcile.Request]int
}

func (b *jitteredBackoff) When(item reconcile.Request) time.Duration {
	b.mu.Lock()
	if b.failures == nil {
		b.failures = map[reconcile.Request]int{}
	}
	n := b.failures[item]
	b.failures[item] = n + 1
	b.mu.Unlock()
	d := b.max
	if n < 40 { // beyond that base·2ⁿ is past any max (and would overflow)
		if e := b.base << n; e < b.max {
			d = e
		}
	}
	return d + time.Duration(b.jitter()*float64(d)/2)
}

func (b *jitteredBackoff) Forget(item reconcile.Request) {
	b.mu.Lock()
	delete(b.failures, item)
	b.mu.Unlock()
}

func (b *jitteredBackoff) NumRequeues(item reconcile.Request) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[item]
}
