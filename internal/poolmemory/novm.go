package poolmemory

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// NoVMYet remembers the VsphereAgents this process created whose VM it has not tried to create yet. No
// VM can carry such a VsphereAgent's UID as its instance UUID, so its first create skips the search
// for an earlier attempt's VM (one vSphere call per VM). The memory is this process's only: after a
// restart every VsphereAgent is searched for, as a crash between "VM created" and "status written" needs.
//
// The VsphereAgent controller may see a new VsphereAgent (its watch) and try its create before the pool
// records it: that attempt searched, but a later Add must not make the retry skip the search (the first
// attempt may have created the VM and failed after, e.g. at power-on). So a Take remembers the attempt
// and Add leaves an attempted UID alone; Forget drops it when the VsphereAgent goes.
type NoVMYet struct{ m sync.Map } // UID -> true: created here, not tried; false: tried

// Add records a VsphereAgent this process just created (nil-safe); a no-op once its create was tried.
func (n *NoVMYet) Add(uid types.UID) {
	if n != nil {
		n.m.LoadOrStore(uid, true)
	}
}

// Take reports whether uid was recorded and not tried yet, and records the attempt: only a first create
// attempt that started after Add skips the search.
func (n *NoVMYet) Take(uid types.UID) bool {
	if n == nil {
		return false
	}
	prev, loaded := n.m.Swap(uid, false)
	return loaded && prev.(bool)
}

// Forget drops what is remembered of a VsphereAgent being deleted.
func (n *NoVMYet) Forget(uid types.UID) {
	if n != nil {
		n.m.Delete(uid)
	}
}
