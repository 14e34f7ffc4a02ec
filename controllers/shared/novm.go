package shared

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// NoVMYet remembers the VsphereAgents this process created whose VM it has not tried to create yet. No
// VM can carry such a VsphereAgent's UID as its instance UUID, so its first create skips the search
// for an earlier attempt's VM (one vSphere call per VM). The memory is this process's only: after a
// restart every VsphereAgent is searched for, as a crash between "VM created" and "status written" needs.
type NoVMYet struct{ m sync.Map }

// Add records a VsphereAgent this process just created (nil-safe).
func (n *NoVMYet) Add(uid types.UID) {
	if n != nil {
		n.m.Store(uid, struct{}{})
	}
}

// Take reports whether uid was recorded and forgets it: only the first create attempt skips the search.
func (n *NoVMYet) Take(uid types.UID) bool {
	if n == nil {
		return false
	}
	_, ok := n.m.LoadAndDelete(uid)
	return ok
}
