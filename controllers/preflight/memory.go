package preflight

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// ForgetPool drops the placement verdicts of a deleted pool (a poolmemory Record; they are keyed
// "<namespace>/<name>/placement/<uid>", see placementMemoKey).
func (c *Checker) ForgetPool(pool types.NamespacedName) {
	p := &c.placement
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.last {
		if strings.HasPrefix(k, pool.String()+"/") {
			delete(p.last, k)
		}
	}
}

// HoldsPool reports whether a placement verdict of the pool is remembered.
func (c *Checker) HoldsPool(pool types.NamespacedName) bool {
	p := &c.placement
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.last {
		if strings.HasPrefix(k, pool.String()+"/") {
			return true
		}
	}
	return false
}
