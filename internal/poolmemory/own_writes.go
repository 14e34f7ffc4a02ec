package poolmemory

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnWrites lets a reconciler read its own writes. The informer cache lags behind a write by a
// moment; a pass that starts in that moment (another event of the same object, a requeue) reads the
// version the write replaced, redoes what the write recorded (a VM created again and "adopted", the
// same status computed again) and writes it with a stale resourceVersion: a conflict, a retry with
// backoff, and API writes that change nothing. With OwnWrites the pass starts from the object the
// API server returned for the last write, as long as the cache still shows a version that write
// replaced. Any other version in the cache (someone else wrote, or the cache caught up) wins.
type OwnWrites[T client.Object] struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ownWrite[T]
}

type ownWrite[T client.Object] struct {
	// latest is the object as the API server returned it after the last write.
	latest T
	// replaced are the resourceVersions this process saw replaced by its own writes of the object.
	replaced map[string]bool
}

// NewOwnWrites returns an empty memory of own writes.
func NewOwnWrites[T client.Object]() *OwnWrites[T] {
	return &OwnWrites[T]{m: map[types.NamespacedName]ownWrite[T]{}}
}

// Wrote records written (as returned by the API server) after a write that replaced version
// replacedRV.
func (w *OwnWrites[T]) Wrote(replacedRV string, written T) {
	if w == nil {
		return
	}
	key := client.ObjectKeyFromObject(written)
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok {
		e.replaced = map[string]bool{}
	}
	e.replaced[replacedRV] = true
	e.latest = written.DeepCopyObject().(T)
	w.m[key] = e
}

// Latest returns a copy of this process's last write of the object when cached is a version that
// write (or an earlier one) replaced, else cached itself. A nil OwnWrites remembers nothing.
func (w *OwnWrites[T]) Latest(cached T) T {
	if w == nil {
		return cached
	}
	key := client.ObjectKeyFromObject(cached)
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[key]
	if !ok {
		return cached
	}
	if e.replaced[cached.GetResourceVersion()] && cached.GetUID() == e.latest.GetUID() {
		return e.latest.DeepCopyObject().(T)
	}
	delete(w.m, key) // the cache shows our write or something newer: nothing to remember any more
	return cached
}

// Forget drops what is remembered of an object (it is gone).
func (w *OwnWrites[T]) Forget(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// Holds reports whether a write of the object is remembered.
func (w *OwnWrites[T]) Holds(key types.NamespacedName) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.m[key]
	return ok
}
