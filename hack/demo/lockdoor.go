package main

import (
	"fmt"
	"sort"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// doorLocker makes every second VM of the pool (in the order they appear) a guest that locks its
// CD-ROM door: ejecting its ISO then waits on vCenter's msg.cdromdisconnect.locked question, raised in
// a real vCenter's shape (label button.yes / summary Yes), which the operator must answer itself.
type doorLocker struct {
	vc     *vcsim.Env
	seen   map[string]bool
	locked map[string]*vcsim.VM // VsphereAgent name -> wrapped VM
	order  int
}

func newDoorLocker(vc *vcsim.Env) *doorLocker {
	return &doorLocker{vc: vc, seen: map[string]bool{}, locked: map[string]*vcsim.VM{}}
}

// observe wraps the new VMs of a snapshot (before their workers install, so before any ejection).
func (l *doorLocker) observe(s *harness.Snapshot) {
	for i := range s.VAs {
		va := &s.VAs[i]
		id := va.Status.VM.InstanceUUID
		if id == "" || l.seen[id] || l.vc.VMByInstanceUUID(id) == nil {
			continue
		}
		l.seen[id] = true
		l.order++
		if l.order%2 == 0 {
			continue
		}
		if vm, err := l.vc.WrapVM(id); err == nil {
			l.locked[va.Name] = vm
		}
	}
}

// answered counts the lock questions answered "Yes" across the locked VMs.
func (l *doorLocker) answered() int {
	n := 0
	for _, vm := range l.locked {
		for _, a := range vm.Answers() {
			if a.Yes {
				n++
			}
		}
	}
	return n
}

// check returns violations: a locked VM reported Ejected without its question answered, or a question
// answered more than once.
func (l *doorLocker) check(s *harness.Snapshot) []string {
	var out []string
	names := make([]string, 0, len(l.locked))
	for name := range l.locked {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		perQuestion := map[string]int{}
		for _, a := range l.locked[name].Answers() {
			perQuestion[a.QuestionID]++
		}
		for q, n := range perQuestion {
			if n > 1 {
				out = append(out, fmt.Sprintf("VsphereAgent %s: lock question %s answered %d times", name, q, n))
			}
		}
		for i := range s.VAs {
			if s.VAs[i].Name == name && harness.EjectionReason(&s.VAs[i]) == afv1.ReasonEjected && len(perQuestion) == 0 {
				out = append(out, fmt.Sprintf("VsphereAgent %s reports Ejected, but its guest locked the door and no lock question was answered", name))
			}
		}
	}
	return out
}
