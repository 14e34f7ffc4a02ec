package planner

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Observation bits of one fuzzed VM: the low three bits pick the VsphereAgent phase, the others set
// the observed facts, in any combination (including ones a stale cache can produce, e.g. phase Released
// while its Agent is bound again).
const (
	bitDeleting = 1 << (iota + 3)
	bitDeleteIssued
	bitMachineRef
	bitAgentBound
)

// fuzzPhases are the VsphereAgent phases a fuzzed VM can report, the empty one (never written yet) first.
var fuzzPhases = []afv1.VMPhase{"", afv1.VMPhasePending, afv1.VMPhaseProvisioning, afv1.VMPhaseAvailable,
	afv1.VMPhaseBound, afv1.VMPhaseReleased, afv1.VMPhaseFailed, afv1.VMPhaseDeleting}

// fuzzObservation decodes one observation byte.
func fuzzObservation(name string, b byte, createdAt time.Time) VMObservation {
	return VMObservation{
		Name: name, Phase: fuzzPhases[b&7], CreatedAt: createdAt,
		Deleting: b&bitDeleting != 0, DeleteIssued: b&bitDeleteIssued != 0,
		MachineRef: b&bitMachineRef != 0, AgentBound: b&bitAgentBound != 0,
	}
}

// Input flag bits.
const (
	flagPaused = 1 << iota
	flagRemoveSurplus
	flagCreateBlocked
	flagMaxVMs
	flagMaxConc
)

// fuzzVMs decodes two bytes per VM: observation bits (mapped through Lifecycle, so the plan is fuzzed
// from what a pass observes), creation minute (ties are frequent on purpose).
func fuzzVMs(b []byte) []VMState {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []VMState
	for i := 0; i+1 < len(b) && len(out) < 256; i += 2 {
		o := fuzzObservation(fmt.Sprintf("vm-%03d", len(out)), b[i], base.Add(time.Duration(b[i+1]%16)*time.Minute))
		out = append(out, StateOf(o))
	}
	return out
}

// FuzzPlan checks the planner's safety and accounting properties on arbitrary observed state:
//
//   - Deficit is exactly max(0, waiting − foreign free Agents − pending creates − our VMs that are
//     supply), where a VM is supply when it is available or in flight and none of in use / failed /
//     releasing / released; Create never exceeds Deficit, and equals it unless paused, blocked or
//     capped, in which case it is the largest count the caps allow (maxVMs counts every live VM
//     and pending create; maxConcurrentProvisioning counts VMs in flight and pending creates);
//   - nothing is created or released while paused, nothing created while creation is blocked;
//   - Release names only VMs of the input, each once, never one that is in use (bound, reserved or
//     backing a Machine), releasing or failed; only under cleanupPolicy Delete; surplus is released
//     only when there is no deficit and never so much that the remaining supply falls short of the
//     waiting demand; every released (unbound after use) VM is removed under Delete;
//   - the Delete/Create actions agree with Release/Create, and the plan does not depend on the order
//     of the VM list nor modify the input.
func FuzzPlan(f *testing.F) {
	// Seeds (phase index | observation bits, minute): in flight, in flight, available, bound, failed,
	// deleting available; a scale-down with released VMs (one of them bound again, one with a leftover
	// machineRef); a burst with pending creates; caps; paused; blocked.
	f.Add(uint16(5), uint16(1), uint16(2), []byte{2, 0, 2, 1, 3, 2, 4, 3, 6, 4, 3 | bitDeleting, 5}, int32(10), int32(3), uint8(flagRemoveSurplus|flagMaxVMs|flagMaxConc))
	f.Add(uint16(0), uint16(0), uint16(0), []byte{3, 0, 3, 1, 5, 2, 5 | bitAgentBound, 3, 1 | bitMachineRef, 4, 5 | bitMachineRef, 5}, int32(0), int32(1), uint8(flagRemoveSurplus))
	f.Add(uint16(20), uint16(0), uint16(5), []byte{2, 0, 2, 0, 0, 0}, int32(12), int32(4), uint8(flagMaxVMs|flagMaxConc))
	f.Add(uint16(3), uint16(5), uint16(0), []byte{3, 1, 2, 2, 3 | bitMachineRef, 3}, int32(0), int32(1), uint8(flagRemoveSurplus))
	f.Add(uint16(4), uint16(0), uint16(0), []byte{}, int32(0), int32(1), uint8(flagPaused|flagRemoveSurplus))
	f.Add(uint16(4), uint16(0), uint16(0), []byte{5, 0, 5 | bitDeleteIssued, 1}, int32(0), int32(1), uint8(flagCreateBlocked|flagRemoveSurplus))
	f.Fuzz(func(t *testing.T, waiting, foreign, pending uint16, vmBytes []byte, maxVMs, maxConc int32, flags uint8) {
		in := Input{
			Waiting: int(waiting), ForeignAvailable: int(foreign), PendingCreates: int(pending),
			VMs:           fuzzVMs(vmBytes),
			Paused:        flags&flagPaused != 0,
			RemoveSurplus: flags&flagRemoveSurplus != 0,
			CreateBlocked: flags&flagCreateBlocked != 0,
			BlockReason:   "Blocked",
		}
		// The CRD admits maxVMs 0..10000 and maxConcurrentProvisioning 1..1000.
		if flags&flagMaxVMs != 0 {
			v := maxVMs % 10001
			if v < 0 {
				v = -v
			}
			in.MaxVMs = &v
		}
		if flags&flagMaxConc != 0 {
			v := maxConc % 1000
			if v < 0 {
				v = -v
			}
			v++
			in.MaxConcurrentProvisioning = &v
		}
		before := append([]VMState(nil), in.VMs...)

		// The spec's own accounting, written independently of Compute's switch.
		byName := map[string]VMState{}
		supply, inFlight, live := 0, 0, int(pending)
		var releasedAfterUse []string
		for _, vm := range in.VMs {
			byName[vm.Name] = vm
			if vm.State == VMReleasing || vm.State == VMFailed {
				continue
			}
			live++
			switch vm.State {
			case VMReleased:
				releasedAfterUse = append(releasedAfterUse, vm.Name)
			case VMAvailable:
				supply++
			case VMInFlight:
				supply++
				inFlight++
			}
		}
		inFlight += int(pending)

		p := Compute(in)

		if !reflect.DeepEqual(before, in.VMs) && len(before) > 0 {
			t.Fatalf("Compute modified its input:\n%+v\n%+v", before, in.VMs)
		}
		wantDeficit := max(0, int(waiting)-int(foreign)-int(pending)-supply)
		if p.Deficit != wantDeficit {
			t.Fatalf("Deficit = %d, want %d (waiting %d, foreign %d, pending %d, supply VMs %d)", p.Deficit, wantDeficit, waiting, foreign, pending, supply)
		}
		if p.Create < 0 || p.Create > p.Deficit {
			t.Fatalf("Create %d outside [0, deficit %d]", p.Create, p.Deficit)
		}
		wantCreate := wantDeficit
		if in.Paused || in.CreateBlocked {
			wantCreate = 0
		}
		if in.MaxVMs != nil {
			wantCreate = min(wantCreate, max(0, int(*in.MaxVMs)-live))
		}
		if in.MaxConcurrentProvisioning != nil {
			wantCreate = min(wantCreate, max(0, int(*in.MaxConcurrentProvisioning)-inFlight))
		}
		if p.Create != wantCreate {
			t.Fatalf("Create = %d, want %d (deficit %d, live %d, in flight %d, limits %v/%v)", p.Create, wantCreate, wantDeficit, live, inFlight, in.MaxVMs, in.MaxConcurrentProvisioning)
		}
		if in.MaxVMs != nil && p.Create > 0 && live+p.Create > int(*in.MaxVMs) {
			t.Fatalf("maxVMs exceeded: %d live + %d > %d", live, p.Create, *in.MaxVMs)
		}
		if in.MaxConcurrentProvisioning != nil && p.Create > 0 && inFlight+p.Create > int(*in.MaxConcurrentProvisioning) {
			t.Fatalf("maxConcurrentProvisioning exceeded: %d in flight + %d > %d", inFlight, p.Create, *in.MaxConcurrentProvisioning)
		}

		// Release: safety first.
		seen := map[string]bool{}
		surplusReleased := 0
		for _, name := range p.Release {
			vm, ok := byName[name]
			if !ok {
				t.Fatalf("released %q, which is not one of the pool's VMs", name)
			}
			if seen[name] {
				t.Fatalf("released %q twice", name)
			}
			seen[name] = true
			if vm.State == VMInUse {
				t.Fatalf("released VM %q that is in use (bound, reserved or backing a Machine): %+v", name, vm)
			}
			if vm.State == VMReleasing || vm.State == VMFailed {
				t.Fatalf("released VM %q that is releasing or failed: %+v", name, vm)
			}
			if vm.State != VMReleased {
				surplusReleased++
			}
		}
		if len(p.Release) > 0 && (in.Paused || !in.RemoveSurplus) {
			t.Fatalf("released %v while paused=%t removeSurplus=%t", p.Release, in.Paused, in.RemoveSurplus)
		}
		if surplusReleased > 0 && p.Deficit > 0 {
			t.Fatalf("released %d surplus VM(s) with a deficit of %d", surplusReleased, p.Deficit)
		}
		if left := supply - surplusReleased + int(foreign) + int(pending); surplusReleased > 0 && left < int(waiting) {
			t.Fatalf("releasing %d surplus VM(s) leaves %d supply for %d waiting AgentMachines", surplusReleased, left, waiting)
		}
		// Surplus is released in full (not more, not less) under Delete when nothing is missing.
		if in.RemoveSurplus && !in.Paused && p.Deficit == 0 {
			want := max(0, supply-max(0, int(waiting)-int(foreign)))
			if surplusReleased != want {
				t.Fatalf("released %d surplus VM(s), want %d (supply %d, waiting %d, foreign %d)", surplusReleased, want, supply, waiting, foreign)
			}
		}
		// Every VM unbound after use goes under Delete (unless paused), none under Retain.
		var gotReleased []string
		for _, name := range p.Release {
			if byName[name].State == VMReleased {
				gotReleased = append(gotReleased, name)
			}
		}
		wantReleased := releasedAfterUse
		if in.Paused || !in.RemoveSurplus {
			wantReleased = nil
		}
		if !sameSet(gotReleased, wantReleased) {
			t.Fatalf("released-after-use removed %v, want %v", gotReleased, wantReleased)
		}

		// Actions agree with the numbers.
		var deleteTargets []string
		creates := 0
		for _, a := range p.Actions {
			switch a.Kind {
			case "Delete":
				deleteTargets = append(deleteTargets, a.Target)
			case "Create":
				creates++
			}
		}
		if !sameSet(deleteTargets, p.Release) || len(deleteTargets) != len(p.Release) {
			t.Fatalf("Delete actions %v disagree with Release %v", deleteTargets, p.Release)
		}
		if (creates == 1) != (p.Create > 0) || creates > 1 {
			t.Fatalf("%d Create action(s) for Create=%d", creates, p.Create)
		}

		// Order independence: the same VMs listed in reverse give the same plan (as sets).
		rev := in
		rev.VMs = make([]VMState, len(in.VMs))
		for i, vm := range in.VMs {
			rev.VMs[len(in.VMs)-1-i] = vm
		}
		q := Compute(rev)
		if q.Create != p.Create || q.Deficit != p.Deficit || !sameSet(q.Release, p.Release) {
			t.Fatalf("plan depends on VM order: create %d/%d deficit %d/%d release %v/%v", p.Create, q.Create, p.Deficit, q.Deficit, p.Release, q.Release)
		}
	})
}

func sameSet(a, b []string) bool {
	x, y := append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	if len(x) == 0 && len(y) == 0 {
		return true
	}
	return reflect.DeepEqual(x, y)
}
