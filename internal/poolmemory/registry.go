package poolmemory

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Record is one thing the process remembers per pool (a pool's expectations, its debounce window, its
// refusal Events' last announcements, ...). Every such record registers with the Registry, whose one
// Forget then drops what it holds of a deleted pool.
type Record interface {
	// ForgetPool drops everything the record holds of the pool.
	ForgetPool(pool types.NamespacedName)
	// HoldsPool reports whether the record holds anything of the pool (what a test of Forget asks).
	HoldsPool(pool types.NamespacedName) bool
}

// Funcs is a Record made of two functions, for a record keyed otherwise (by the pool's key string, or
// one whose pool entries share a map with other objects').
type Funcs struct {
	Forget func(pool types.NamespacedName)
	Holds  func(pool types.NamespacedName) bool
}

// ForgetPool calls Forget.
func (f Funcs) ForgetPool(pool types.NamespacedName) { f.Forget(pool) }

// HoldsPool calls Holds.
func (f Funcs) HoldsPool(pool types.NamespacedName) bool { return f.Holds(pool) }

// Registry is every per-pool record of the process, by name. The wiring makes one and hands it to both
// controllers; each registers its records when it is set up, and the pool controller calls Forget once
// it sees its pool gone. Records keyed by a VsphereAgent (its own writes, its VM checks) are not here:
// they are forgotten when their VsphereAgent goes, which a pool's deletion waits for.
type Registry struct {
	mu      sync.Mutex
	records map[string]Record
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{records: map[string]Record{}} }

// Register adds rec under name; a second record under the same name replaces the first (a controller
// set up again).
func (r *Registry) Register(name string, rec Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[name] = rec
}

// Forget drops what every registered record holds of the pool (it was deleted).
func (r *Registry) Forget(pool types.NamespacedName) {
	r.mu.Lock()
	recs := make([]Record, 0, len(r.records))
	for _, rec := range r.records {
		recs = append(recs, rec)
	}
	r.mu.Unlock()
	for _, rec := range recs {
		rec.ForgetPool(pool)
	}
}

// Names lists the registered records, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.records))
	for n := range r.records {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Holding lists, sorted, the registered records that hold something of the pool.
func (r *Registry) Holding(pool types.NamespacedName) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n, rec := range r.records {
		if rec.HoldsPool(pool) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
