package pool

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// expectations remembers VsphereAgents a pool created or deleted that its cache has not shown yet, so a
// burst of watch events never double-creates (the classic controller expectations pattern). Entries
// expire after a timeout in case an event is lost.
type expectations struct {
	clock   clock.PassiveClock
	timeout time.Duration
	mu      sync.Mutex
	creates map[string]map[string]time.Time // pool key -> VsphereAgent name -> when
	deletes map[string]map[string]time.Time
}

func newExpectations(c clock.PassiveClock) *expectations {
	return &expectations{clock: c, timeout: 2 * time.Minute, creates: map[string]map[string]time.Time{}, deletes: map[string]map[string]time.Time{}}
}

func (e *expectations) expectCreate(pool, name string) { e.add(e.creates, pool, name) }
func (e *expectations) expectDelete(pool, name string) { e.add(e.deletes, pool, name) }

func (e *expectations) add(m map[string]map[string]time.Time, pool, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m[pool] == nil {
		m[pool] = map[string]time.Time{}
	}
	m[pool][name] = e.clock.Now()
}

// pending reconciles expectations with what the cache lists (present names) and returns the creations
// still unseen and the deletions still listed.
func (e *expectations) pending(pool string, present sets.Set[string]) (creates int, deleting sets.Set[string]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	for name, at := range e.creates[pool] {
		if present.Has(name) || now.Sub(at) > e.timeout {
			delete(e.creates[pool], name)
		}
	}
	deleting = sets.New[string]()
	for name, at := range e.deletes[pool] {
		if !present.Has(name) || now.Sub(at) > e.timeout {
			delete(e.deletes[pool], name)
			continue
		}
		deleting.Insert(name)
	}
	return len(e.creates[pool]), deleting
}

func (e *expectations) forget(pool string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.creates, pool)
	delete(e.deletes, pool)
}

// ForgetPool drops a deleted pool's expectations (a poolmemory Record).
func (e *expectations) ForgetPool(pool types.NamespacedName) { e.forget(pool.String()) }

// HoldsPool reports whether the pool has an entry, even an emptied one.
func (e *expectations) HoldsPool(pool types.NamespacedName) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, c := e.creates[pool.String()]
	_, d := e.deletes[pool.String()]
	return c || d
}
