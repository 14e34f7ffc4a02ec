package staticip

import "k8s.io/apimachinery/pkg/types"

// ForgetPool drops the first-pass mark of a deleted pool (a poolmemory Record).
func (ls *Leases) ForgetPool(pool types.NamespacedName) { ls.passed.Delete(pool) }

// HoldsPool reports whether the pool's first lease pass is remembered.
func (ls *Leases) HoldsPool(pool types.NamespacedName) bool {
	_, ok := ls.passed.Load(pool)
	return ok
}
