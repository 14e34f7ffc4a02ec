package planner

import (
	"fmt"
	"reflect"
	"slices"
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
	// bitTrouble: a Failed VM timed out registering (counts towards the breaker); any other VM's
	// creation failed (VMCreateFailed).
	bitTrouble
)

// fuzzPhases are the VsphereAgent phases a fuzzed VM can report, the empty one (never written yet) first.
var fuzzPhases = []afv1.VMPhase{"", afv1.VMPhasePending, afv1.VMPhaseProvisioning, afv1.VMPhaseAvailable,
	afv1.VMPhaseBound, afv1.VMPhaseReleased, afv1.VMPhaseFailed, afv1.VMPhaseDeleting}

// fuzzObservation decodes one observation byte.
func fuzzObservation(name string, b byte, createdAt time.Time) VMObservation {
	o := VMObservation{
		Name: name, Phase: fuzzPhases[b&7], CreatedAt: createdAt,
		Deleting: b&bitDeleting != 0, DeleteIssued: b&bitDeleteIssued != 0,
		MachineRef: b&bitMachineRef != 0, AgentBound: b&bitAgentBound != 0,
	}
	if b&bitTrouble != 0 {
		o.Reason = afv1.ReasonVMCreateFailed
		if o.Phase == afv1.VMPhaseFailed {
			o.Reason = afv1.ReasonRegistrationTimeout
		}
	}
	return o
}

// Snapshot flag bits (flags).
const (
	flagPaused = 1 << iota
	flagRemoveSurplus
	flagNoSession
	flagMaxVMs
	flagMaxConc
	flagPreflight
	flagStaticIP
	flagNoISO
)

// World bits (world): failure domains, the image check, the burst window.
const (
	worldZoned = 1 << iota
	worldImages
	worldDebounce
	worldBurst1 // worldBurst1|worldBurst2: the open burst (none; stable 2s; changed; opened 20s ago)
	worldBurst2
	worldNoHeadroom // z0 has no headroom
	worldHeadroom1  // z2 has headroom for one VM
)

// fuzzBase is the fuzzed VMs' time origin; a pass runs 70 minutes later with 1 h retention, so a VM
// failed in its first ten minutes has expired.
var fuzzBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fuzzSnapshot decodes a snapshot. Two bytes per VM: observation bits (mapped through Lifecycle by the
// planner, so the plan is fuzzed from what a pass observes); then the creation minute (low four bits,
// ties frequent on purpose), the failure domain index (two bits, index 3 names a removed domain), an
// outdated image, a static-IP lease. A VM fails, registers, and is created at its minute.
func fuzzSnapshot(waiting, foreign, pending uint16, vmBytes []byte, maxVMs, maxConc int32, flags, world uint8) Snapshot {
	s := Snapshot{
		Now: fuzzBase.Add(70 * time.Minute), Waiting: int(waiting), ForeignAvailable: int(foreign), PendingCreates: int(pending),
		Paused: flags&flagPaused != 0, RemoveSurplus: flags&flagRemoveSurplus != 0,
		Blocks: Blocks{NoSession: flags&flagNoSession != 0, NoISO: flags&flagNoISO != 0},
		// The CRD's defaults and Options' defaults.
		RegistrationFailureThreshold: 3, FailedRetention: time.Hour, Debounce: Debounce{Idle: -1},
	}
	if flags&flagPreflight != 0 {
		s.Blocks.Preflight = "InvalidPlacement"
	}
	if flags&flagStaticIP != 0 {
		s.Blocks.StaticIP = "IPAMUnavailable"
	}
	// The CRD admits maxVMs 0..10000 and maxConcurrentProvisioning 1..1000.
	if flags&flagMaxVMs != 0 {
		v := maxVMs % 10001
		if v < 0 {
			v = -v
		}
		s.MaxVMs = &v
	}
	if flags&flagMaxConc != 0 {
		v := maxConc % 1000
		if v < 0 {
			v = -v
		}
		v++
		s.MaxConcurrentProvisioning = &v
	}
	if world&worldImages != 0 {
		s.CurrentImage, s.ReplaceOutdated = imageNew, true
	}
	if world&worldDebounce != 0 {
		s.Debounce = Debounce{Idle: time.Second, Max: 10 * time.Second}
	}
	switch world & (worldBurst1 | worldBurst2) {
	case worldBurst1:
		s.Burst = &Burst{Value: s.Waiting, First: s.Now.Add(-2 * time.Second), LastChange: s.Now.Add(-2 * time.Second)}
	case worldBurst2:
		s.Burst = &Burst{Value: s.Waiting + 1, First: s.Now.Add(-2 * time.Second), LastChange: s.Now.Add(-2 * time.Second)}
	case worldBurst1 | worldBurst2:
		s.Burst = &Burst{Value: s.Waiting + 1, First: s.Now.Add(-20 * time.Second), LastChange: s.Now.Add(-500 * time.Millisecond)}
	}
	var names []string
	if world&worldZoned != 0 {
		names = []string{"z0", "z1", "z2"}
	}
	for i := 0; i+1 < len(vmBytes) && len(s.VMs) < 256; i += 2 {
		b, extra := vmBytes[i], vmBytes[i+1]
		at := fuzzBase.Add(time.Duration(extra%16) * time.Minute)
		vm := VM{VMObservation: fuzzObservation(fmt.Sprintf("vm-%03d", len(s.VMs)), b, at), Image: imageNew}
		vm.HasVM = vm.Phase != "" && vm.Phase != afv1.VMPhasePending
		vm.PhaseChangedAt = at
		switch vm.Phase {
		case afv1.VMPhaseAvailable, afv1.VMPhaseBound, afv1.VMPhaseReleased:
			vm.RegisteredAt = at
		}
		if idx := int(extra>>4) & 3; idx == 3 {
			vm.Domain = "z3" // not (or no longer) one of the pool's domains
		} else if names != nil {
			vm.Domain = names[idx]
		}
		if extra&(1<<6) != 0 {
			vm.Image = imageOld
		}
		vm.StaticIPLease = extra&(1<<7) != 0
		s.VMs = append(s.VMs, vm)
	}
	words := names
	if words == nil {
		words = []string{""}
	}
	for _, name := range words {
		d := Domain{Name: name}
		switch {
		case name == "z0" && world&worldNoHeadroom != 0:
			d.Skipped, d.Headroom = true, new(int)
		case name == "z1":
			d.Skipped, d.Failing = true, true
		case name == "z2":
			d.MaxVMs = i32(4)
			if world&worldHeadroom1 != 0 {
				one := 1
				d.Headroom = &one
			}
		}
		for _, vm := range s.VMs {
			if vm.Domain == name && !vm.Deleting && vm.Phase != afv1.VMPhaseFailed {
				d.VMs++
				if !vm.HasVM || vm.Phase == afv1.VMPhaseProvisioning {
					d.InFlight++
				}
			}
		}
		s.Domains = append(s.Domains, d)
	}
	return s
}

// FuzzPlan checks the whole plan's safety and accounting properties on arbitrary observed state,
// against the rules written out again here, independently of Plan:
//
//   - the block is the first that applies of: registration breaker (three counted failures after the
//     last registration), preflight, static addressing, vCenter session, ISO; nothing is created while
//     blocked or paused;
//   - abandoned VMs (in flight, not created, domain removed, or its domain failing and its own creation failed) and
//     outdated ones (in flight or available, booted an older image, no lease, replacement on, neither
//     blocked nor paused) are exactly the ones released with those reasons, and are not supply;
//   - Deficit is exactly max(0, waiting − foreign free Agents − pending creates − our supply VMs);
//     the creations due are the deficit capped by maxVMs (every VM that may exist in vCenter, releasing
//     and failed ones included, and every pending create counts) and
//     maxConcurrentProvisioning (VMs in flight and pending creates), never beyond either limit, and
//     none beyond a domain's maxVMs or headroom nor in a skipped domain; creates + supply ≥ demand
//     unless paused, blocked, waiting for the burst window or held by a limit or the domains;
//   - never a release of a VM in use (bound, reserved or backing a Machine), releasing or failed; only
//     under cleanupPolicy Delete for surplus and released-after-use VMs, surplus only without a deficit
//     and never so much that the supply left falls short of demand; every released-after-use VM goes;
//   - expiry is exactly the Failed VMs not being deleted failed longer than the retention ago;
//   - paused: nothing created, released or expired, no orphan scan, the burst window left as it was;
//   - the burst window: creation due opens or keeps one with the waiting count; none when no creation is due;
//   - the planned actions agree with the decisions; the plan does not depend on the order of the VM
//     list nor modify its snapshot.
func FuzzPlan(f *testing.F) {
	// Seeds (phase index | observation bits, minute | domain/image/lease bits): in flight, in flight,
	// available, bound, failed, deleting available; a scale-down with released VMs (one of them bound
	// again, one with a leftover machineRef); a burst with pending creates; caps; paused; blocked; zones
	// with a removed and a failing domain; outdated images; the breaker; a burst window.
	f.Add(uint16(5), uint16(1), uint16(2), []byte{2, 0, 2, 1, 3, 2, 4, 3, 6, 4, 3 | bitDeleting, 5}, int32(10), int32(3), uint8(flagRemoveSurplus|flagMaxVMs|flagMaxConc), uint8(0))
	f.Add(uint16(0), uint16(0), uint16(0), []byte{3, 0, 3, 1, 5, 2, 5 | bitAgentBound, 3, 1 | bitMachineRef, 4, 5 | bitMachineRef, 5}, int32(0), int32(1), uint8(flagRemoveSurplus), uint8(0))
	f.Add(uint16(20), uint16(0), uint16(5), []byte{2, 0, 2, 0, 0, 0}, int32(12), int32(4), uint8(flagMaxVMs|flagMaxConc), uint8(0))
	f.Add(uint16(3), uint16(5), uint16(0), []byte{3, 1, 2, 2, 3 | bitMachineRef, 3}, int32(0), int32(1), uint8(flagRemoveSurplus), uint8(0))
	f.Add(uint16(4), uint16(0), uint16(0), []byte{}, int32(0), int32(1), uint8(flagPaused|flagRemoveSurplus), uint8(worldDebounce|worldBurst1))
	f.Add(uint16(4), uint16(0), uint16(0), []byte{5, 0, 5 | bitDeleteIssued, 1}, int32(0), int32(1), uint8(flagNoSession|flagRemoveSurplus), uint8(0))
	f.Add(uint16(6), uint16(0), uint16(0), []byte{1, 0x30, 1 | bitTrouble, 0x11, 0, 0x22, 3, 0x03, 1, 0x14}, int32(0), int32(1), uint8(flagRemoveSurplus), uint8(worldZoned|worldHeadroom1))
	f.Add(uint16(2), uint16(0), uint16(0), []byte{3, 0x40, 2, 0x41, 3, 0xc2, 4, 0x43}, int32(0), int32(1), uint8(flagRemoveSurplus), uint8(worldImages))
	f.Add(uint16(2), uint16(0), uint16(0), []byte{6 | bitTrouble, 12, 6 | bitTrouble, 13, 6 | bitTrouble, 14, 3, 2, 6 | bitTrouble, 1}, int32(0), int32(1), uint8(flagRemoveSurplus|flagPreflight|flagNoISO), uint8(0))
	f.Add(uint16(7), uint16(0), uint16(0), []byte{2, 0}, int32(0), int32(1), uint8(flagRemoveSurplus), uint8(worldZoned|worldDebounce|worldBurst2|worldNoHeadroom))
	f.Fuzz(func(t *testing.T, waiting, foreign, pending uint16, vmBytes []byte, maxVMs, maxConc int32, flags, world uint8) {
		s := fuzzSnapshot(waiting, foreign, pending, vmBytes, maxVMs, maxConc, flags, world)
		before := fuzzSnapshot(waiting, foreign, pending, vmBytes, maxVMs, maxConc, flags, world)
		d := Plan(s)
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("Plan modified its snapshot")
		}
		checkPlan(t, s, d)

		// Order independence: the same VMs listed in reverse give the same plan (as sets).
		rev := s
		rev.VMs = slices.Clone(s.VMs)
		slices.Reverse(rev.VMs)
		q := Plan(rev)
		if !sameSet(q.Creates, d.Creates) || q.Deficit != d.Deficit || q.Block != d.Block || !sameSet(names(q.Releases), names(d.Releases)) ||
			!sameSet(q.Expire, d.Expire) || q.RequeueAfter != d.RequeueAfter {
			t.Fatalf("plan depends on VM order:\n%+v\n%+v", d, q)
		}
	})
}

// checkPlan holds one plan to the rules, recomputed here from the snapshot.
func checkPlan(t *testing.T, s Snapshot, d Decisions) {
	t.Helper()
	listed := map[string]Domain{}
	for _, dom := range s.Domains {
		listed[dom.Name] = dom
	}
	// The breaker, written out again: counted failures after the last registration.
	var lastRegistered time.Time
	for _, vm := range s.VMs {
		if vm.RegisteredAt.After(lastRegistered) {
			lastRegistered = vm.RegisteredAt
		}
	}
	failures := 0
	for _, vm := range s.VMs {
		if vm.Phase == afv1.VMPhaseFailed && vm.Reason == afv1.ReasonRegistrationTimeout && vm.PhaseChangedAt.After(lastRegistered) {
			failures++
		}
	}
	wantBlock := ""
	for _, b := range []struct {
		on     bool
		reason string
	}{{failures >= 3, afv1.ReasonRegistrationFailing}, {s.Blocks.Preflight != "", s.Blocks.Preflight},
		{s.Blocks.Hardware != "", afv1.ReasonHostValidationFailing}, {s.Blocks.StaticIP != "", s.Blocks.StaticIP},
		{s.Blocks.NoSession, afv1.ReasonWaitingForVSphere}, {s.Blocks.NoISO, afv1.ReasonWaitingForISO}} {
		if b.on {
			wantBlock = b.reason
			break
		}
	}
	if d.Block != wantBlock {
		t.Fatalf("block %q, want %q", d.Block, wantBlock)
	}

	// Each VM's fate, written out again.
	state := map[string]VMLifecycle{}
	abandoned, outdated := map[string]bool{}, map[string]bool{}
	supply, inFlight, live := 0, s.PendingCreates, s.PendingCreates
	var releasedAfterUse, wantExpire []string
	for _, vm := range s.VMs {
		st := Lifecycle(vm.VMObservation)
		state[vm.Name] = st
		dom, ok := listed[vm.Domain]
		if !vm.HasVM && st == VMInFlight && (!ok || (dom.Failing && vm.Reason == afv1.ReasonVMCreateFailed)) {
			abandoned[vm.Name], st = true, VMReleasing
		}
		if s.ReplaceOutdated && vm.Image == imageOld && (st == VMInFlight || st == VMAvailable) && !vm.StaticIPLease && wantBlock == "" && !s.Paused {
			outdated[vm.Name], st = true, VMReleasing
		}
		if vm.Phase == afv1.VMPhaseFailed && !vm.Deleting && s.Now.Sub(vm.PhaseChangedAt) > s.FailedRetention && !s.Paused {
			wantExpire = append(wantExpire, vm.Name)
		}
		// maxVMs counts every VM that may exist in vCenter, whatever its state: all but a Failed one whose
		// reason records its VM destroyed or never created.
		switch {
		case vm.Phase != afv1.VMPhaseFailed:
			live++
		case vm.Reason == afv1.ReasonRegistrationTimeout, vm.Reason == "VMNotFound", vm.Reason == afv1.ReasonDuplicateName,
			vm.Reason == afv1.ReasonInvalidPlacement, vm.Reason == afv1.ReasonOwnershipMismatch:
		default:
			live++
		}
		switch st {
		case VMReleasing, VMFailed:
			continue
		case VMReleased:
			releasedAfterUse = append(releasedAfterUse, vm.Name)
		case VMAvailable:
			supply++
		case VMInFlight:
			supply++
			inFlight++
		}
	}
	if !sameSet(d.Expire, wantExpire) {
		t.Fatalf("expire %v, want %v", d.Expire, wantExpire)
	}

	// Creation.
	wantDeficit := max(0, s.Waiting-s.ForeignAvailable-s.PendingCreates-supply)
	if d.Deficit != wantDeficit {
		t.Fatalf("deficit %d, want %d (waiting %d, foreign %d, pending %d, supply VMs %d)", d.Deficit, wantDeficit, s.Waiting, s.ForeignAvailable, s.PendingCreates, supply)
	}
	due := wantDeficit
	if s.Paused || wantBlock != "" {
		due = 0
	}
	if s.MaxVMs != nil {
		due = min(due, max(0, int(*s.MaxVMs)-live))
	}
	if s.MaxConcurrentProvisioning != nil {
		due = min(due, max(0, int(*s.MaxConcurrentProvisioning)-inFlight))
	}
	creates := len(d.Creates)
	if creates > due {
		t.Fatalf("%d creation(s), only %d due (deficit %d, live %d, in flight %d, limits %v/%v, block %q)", creates, due, wantDeficit, live, inFlight, s.MaxVMs, s.MaxConcurrentProvisioning, wantBlock)
	}
	if s.MaxVMs != nil && creates > 0 && live+creates > int(*s.MaxVMs) {
		t.Fatalf("maxVMs exceeded: %d live + %d > %d", live, creates, *s.MaxVMs)
	}
	if s.MaxConcurrentProvisioning != nil && creates > 0 && inFlight+creates > int(*s.MaxConcurrentProvisioning) {
		t.Fatalf("maxConcurrentProvisioning exceeded: %d in flight + %d > %d", inFlight, creates, *s.MaxConcurrentProvisioning)
	}
	perDomain := map[string]int{}
	for _, name := range d.Creates {
		dom, ok := listed[name]
		if !ok || dom.Skipped {
			t.Fatalf("creates in domain %q (listed %t, skipped %t)", name, ok, dom.Skipped)
		}
		perDomain[name]++
		if dom.MaxVMs != nil && dom.VMs+perDomain[name] > int(*dom.MaxVMs) {
			t.Fatalf("domain %s maxVMs %d exceeded (%d VMs + %d)", name, *dom.MaxVMs, dom.VMs, perDomain[name])
		}
		if dom.Headroom != nil && perDomain[name] > *dom.Headroom {
			t.Fatalf("domain %s headroom %d exceeded (%d)", name, *dom.Headroom, perDomain[name])
		}
	}
	deferred := d.RequeueAfter > 0
	short := false
	for _, a := range d.Actions {
		short = short || a.Reason == afv1.ReasonNoFailureDomainAvailable
	}
	if (deferred || short) != (creates < due) {
		t.Fatalf("%d creation(s) of %d due: deferred %t (requeue %s), domains short %t", creates, due, deferred, d.RequeueAfter, short)
	}
	held := s.Paused || wantBlock != "" || deferred || short || due < wantDeficit
	if !held && creates+supply+s.ForeignAvailable+s.PendingCreates < s.Waiting {
		t.Fatalf("%d creation(s) + %d supply + %d foreign + %d pending fall short of %d waiting, nothing holding creation", creates, supply, s.ForeignAvailable, s.PendingCreates, s.Waiting)
	}

	// The burst window.
	switch {
	case s.Paused:
		if !reflect.DeepEqual(d.Burst, s.Burst) || d.CloseBurst {
			t.Fatalf("paused, the burst moved: %+v -> %+v (closes %t)", s.Burst, d.Burst, d.CloseBurst)
		}
	case due == 0:
		if d.Burst != nil || d.CloseBurst || deferred {
			t.Fatalf("no creation due, burst %+v closes %t requeue %s", d.Burst, d.CloseBurst, d.RequeueAfter)
		}
	case s.Debounce.Idle >= 0:
		if d.Burst == nil || d.Burst.Value != s.Waiting || d.CloseBurst == deferred {
			t.Fatalf("creation due: burst %+v closes %t deferred %t for %d waiting", d.Burst, d.CloseBurst, deferred, s.Waiting)
		}
	default:
		if deferred {
			t.Fatalf("deferred without a burst window")
		}
	}

	// Releases: safety first.
	seen := map[string]bool{}
	surplus := 0
	var gotReleased, gotAbandoned, gotOutdated []string
	for _, r := range d.Releases {
		st, ok := state[r.Name]
		if !ok {
			t.Fatalf("released %q, which is not one of the pool's VMs", r.Name)
		}
		if seen[r.Name] {
			t.Fatalf("released %q twice", r.Name)
		}
		if r.Message == "" {
			t.Fatalf("release %+v does not say why", r)
		}
		seen[r.Name] = true
		if st == VMInUse || st == VMReleasing || st == VMFailed {
			t.Fatalf("released VM %q that is %s: %+v", r.Name, st, r)
		}
		switch r.Reason {
		case afv1.ReasonReleased:
			gotReleased = append(gotReleased, r.Name)
		case afv1.ReasonSurplus:
			surplus++
			if abandoned[r.Name] || outdated[r.Name] || (st != VMAvailable && st != VMInFlight) {
				t.Fatalf("surplus release of %q (%s, abandoned %t, outdated %t)", r.Name, st, abandoned[r.Name], outdated[r.Name])
			}
		case afv1.ReasonFailureDomainNotFound, afv1.ReasonCreationsFailing:
			gotAbandoned = append(gotAbandoned, r.Name)
		case afv1.ReasonOutdatedImage:
			gotOutdated = append(gotOutdated, r.Name)
		default:
			t.Fatalf("release %+v with an unknown reason", r)
		}
	}
	if s.Paused && len(d.Releases)+len(d.Creates)+len(d.Expire) > 0 || s.Paused == d.ScanOrphans {
		t.Fatalf("paused %t: creates %v releases %v expire %v scan %t", s.Paused, d.Creates, d.Releases, d.Expire, d.ScanOrphans)
	}
	want := func(m map[string]bool) []string {
		var out []string
		for name := range m {
			if !s.Paused {
				out = append(out, name)
			}
		}
		return out
	}
	if !sameSet(gotAbandoned, want(abandoned)) || !sameSet(gotOutdated, want(outdated)) {
		t.Fatalf("abandoned released %v want %v; outdated released %v want %v", gotAbandoned, want(abandoned), gotOutdated, want(outdated))
	}
	if (surplus > 0 || len(gotReleased) > 0) && !s.RemoveSurplus {
		t.Fatalf("released %v under cleanupPolicy Retain", d.Releases)
	}
	if surplus > 0 && d.Deficit > 0 {
		t.Fatalf("released %d surplus VM(s) with a deficit of %d", surplus, d.Deficit)
	}
	if left := supply - surplus + s.ForeignAvailable + s.PendingCreates; surplus > 0 && left < s.Waiting {
		t.Fatalf("releasing %d surplus VM(s) leaves %d supply for %d waiting AgentMachines", surplus, left, s.Waiting)
	}
	if s.RemoveSurplus && !s.Paused && d.Deficit == 0 {
		if wantSurplus := max(0, supply-max(0, s.Waiting-s.ForeignAvailable)); surplus != wantSurplus {
			t.Fatalf("released %d surplus VM(s), want %d (supply %d, waiting %d, foreign %d)", surplus, wantSurplus, supply, s.Waiting, s.ForeignAvailable)
		}
	}
	if wantReleased := releasedAfterUse; !sameSet(gotReleased, wantReleased) && s.RemoveSurplus && !s.Paused {
		t.Fatalf("released-after-use removed %v, want %v", gotReleased, wantReleased)
	}

	// The planned actions agree with the decisions (abandoned VMs have none).
	var deleteTargets []string
	createActions := 0
	for _, a := range d.Actions {
		switch a.Kind {
		case ActionDelete:
			deleteTargets = append(deleteTargets, a.Target)
		case ActionCreate:
			createActions++
		}
	}
	var planned []string
	for _, r := range d.Releases {
		if !abandoned[r.Name] {
			planned = append(planned, r.Name)
		}
	}
	if !s.Paused && (!sameSet(deleteTargets, planned) || len(deleteTargets) != len(planned)) {
		t.Fatalf("Delete actions %v disagree with releases %v", deleteTargets, planned)
	}
	if createActions > 1 || (createActions == 1) != (due > 0) {
		t.Fatalf("%d Create action(s) for %d creation(s) due", createActions, due)
	}
}

func names(rs []Release) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
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
