package poolmemory

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// LateRegistrationWindow is how long the identity of a VM destroyed before its Agent appeared is
// remembered. A host that called home just before its VM was destroyed still becomes an Agent:
// assisted-service creates the Agent from the registration it already accepted, and fills in the
// inventory (MAC, serial) with a later write, so the Agent can appear, or become recognisable, after
// the VsphereAgent's cleanup looked for it. Such an Agent is unbound, never reconnects and would stay
// for good; the pool deletes it when it shows up within this window.
const LateRegistrationWindow = 15 * time.Minute

// DestroyedHost is a VM this process destroyed with no Agent of its identity in sight.
type DestroyedHost struct {
	VM, VsphereAgent string
	MAC, BIOSUUID    string
	At               time.Time
}

// DestroyedHosts remembers, per pool, the VMs destroyed before their Agent appeared (see
// LateRegistrationWindow). The memory is this process's only: a late Agent that appears while the
// manager restarts stays, as an unbound and disconnected Agent the user can delete.
type DestroyedHosts struct {
	mu     sync.Mutex
	byPool map[types.NamespacedName][]DestroyedHost
}

// Add records a destroyed VM of a pool (nil-safe; an unknown MAC is not recorded: nothing could match).
func (d *DestroyedHosts) Add(pool types.NamespacedName, h DestroyedHost) {
	if d == nil || h.MAC == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byPool == nil {
		d.byPool = map[types.NamespacedName][]DestroyedHost{}
	}
	d.byPool[pool] = append(d.byPool[pool], h)
}

// Of returns the pool's destroyed VMs still within the window at now, and forgets the older ones.
func (d *DestroyedHosts) Of(pool types.NamespacedName, now time.Time) []DestroyedHost {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.keep(pool, func(h DestroyedHost) bool { return now.Sub(h.At) < LateRegistrationWindow })
	return append([]DestroyedHost(nil), kept...)
}

// Forget drops a destroyed VM whose late Agent was dealt with: by MAC and BIOS UUID, since a static-IP
// lease may have handed the same MAC to another VM destroyed within the window.
func (d *DestroyedHosts) Forget(pool types.NamespacedName, host DestroyedHost) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keep(pool, func(h DestroyedHost) bool { return h.MAC != host.MAC || h.BIOSUUID != host.BIOSUUID })
}

// keep filters the pool's records in place (d.mu held) and returns what is left.
func (d *DestroyedHosts) keep(pool types.NamespacedName, keep func(DestroyedHost) bool) []DestroyedHost {
	kept := d.byPool[pool][:0]
	for _, h := range d.byPool[pool] {
		if keep(h) {
			kept = append(kept, h)
		}
	}
	if len(kept) == 0 {
		delete(d.byPool, pool)
		return nil
	}
	d.byPool[pool] = kept
	return kept
}

// ForgetPool drops every record of a deleted pool (a Record of the Registry).
func (d *DestroyedHosts) ForgetPool(pool types.NamespacedName) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.byPool, pool)
}

// HoldsPool reports whether a destroyed VM of the pool is remembered.
func (d *DestroyedHosts) HoldsPool(pool types.NamespacedName) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.byPool[pool]) > 0
}
