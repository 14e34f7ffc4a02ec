package planner

import (
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// FuzzLifecycle checks that every combination of observed facts maps to exactly one state, and that
// the state agrees with the facts: a VM being deleted is Releasing whatever else is seen; a failed one
// stays Failed; a bound Agent (the "Agent already bound" override) or a Machine keeps a VM InUse, never
// Available or Released (so never surplus); a VM is Available or Released only when its phase says so.
func FuzzLifecycle(f *testing.F) {
	for _, b := range []byte{0, 3, 3 | bitAgentBound, 5 | bitAgentBound, 5 | bitMachineRef, 6 | bitAgentBound, 4 | bitDeleteIssued, 7} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b byte) {
		o := fuzzObservation("vm", b, time.Time{})
		got := Lifecycle(o)
		switch got {
		case VMInFlight, VMAvailable, VMInUse, VMReleased, VMReleasing, VMFailed:
		default:
			t.Fatalf("Lifecycle(%+v) = %q, not a lifecycle state", o, got)
		}
		releasing := o.Deleting || o.DeleteIssued
		if (got == VMReleasing) != releasing {
			t.Fatalf("Lifecycle(%+v) = %s; releasing is exactly deleting or delete issued", o, got)
		}
		if !releasing && (got == VMFailed) != (o.Phase == afv1.VMPhaseFailed) {
			t.Fatalf("Lifecycle(%+v) = %s; failed is exactly phase Failed", o, got)
		}
		if !releasing && o.Phase != afv1.VMPhaseFailed && o.AgentBound && got != VMInUse {
			t.Fatalf("Lifecycle(%+v) = %s; a VM whose Agent is bound is in use", o, got)
		}
		if got == VMInUse && !o.AgentBound && !o.MachineRef && o.Phase != afv1.VMPhaseBound {
			t.Fatalf("Lifecycle(%+v) = in use without a bound Agent, a Machine or phase Bound", o)
		}
		if got == VMAvailable && (o.Phase != afv1.VMPhaseAvailable || o.MachineRef || o.AgentBound) {
			t.Fatalf("Lifecycle(%+v) = available, but phase, Machine or Agent say otherwise", o)
		}
		if got == VMReleased && (o.Phase != afv1.VMPhaseReleased || o.AgentBound) {
			t.Fatalf("Lifecycle(%+v) = released, but phase or Agent say otherwise", o)
		}
	})
}

// FuzzFailedExpired checks failed-VM expiry: exactly the Failed VsphereAgents not yet deleting whose
// failure is known and older than the retention expire, and once expired a VM stays expired later.
func FuzzFailedExpired(f *testing.F) {
	f.Add(byte(6), int64(0), int64(3601), uint32(3600))
	f.Add(byte(6), int64(0), int64(3600), uint32(3600))
	f.Add(byte(6|bitDeleting), int64(0), int64(7200), uint32(3600))
	f.Add(byte(3), int64(0), int64(7200), uint32(3600))
	f.Add(byte(6), int64(-1), int64(7200), uint32(0))
	f.Fuzz(func(t *testing.T, b byte, failedAtSec, nowSec int64, retentionSec uint32) {
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		// Seconds within ±100 years of base: time arithmetic stays exact. A negative failure second
		// stands for "unknown" (no lastTransitionTime).
		const span = 100 * 365 * 24 * 3600
		o := fuzzObservation("vm", b, base)
		if failedAtSec >= 0 {
			o.PhaseChangedAt = base.Add(time.Duration(failedAtSec%span) * time.Second)
		}
		now := base.Add(time.Duration(nowSec%span) * time.Second)
		retention := time.Duration(retentionSec) * time.Second
		got := failedExpired(o, now, retention)
		want := o.Phase == afv1.VMPhaseFailed && !o.Deleting && !o.PhaseChangedAt.IsZero() && now.Sub(o.PhaseChangedAt) > retention
		if got != want {
			t.Fatalf("failedExpired(%+v, now %s, retention %s) = %t, want %t", o, now, retention, got, want)
		}
		if got && !failedExpired(o, now.Add(time.Hour), retention) {
			t.Fatalf("expired at %s but not an hour later", now)
		}
		if got && Lifecycle(o) != VMFailed && Lifecycle(o) != VMReleasing {
			t.Fatalf("expired VM %+v is %s, neither failed nor releasing", o, Lifecycle(o))
		}
	})
}

// breakerReasons are the Failed reasons a fuzzed VM can carry: the counted ones and others.
var breakerReasons = []string{afv1.ReasonRegistrationTimeout, afv1.ReasonDuplicateName, afv1.ReasonInvalidPlacement,
	afv1.ReasonOwnershipMismatch, afv1.ReasonVMCreateFailed, "VMNotFound", ""}

// fuzzBreakerVMs decodes three bytes per VM: observation bits, reason (low 3 bits) plus "registered" (bit
// 3) plus "failure time unknown" (bit 4), minute of its failure or registration.
func fuzzBreakerVMs(b []byte) []VMObservation {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []VMObservation
	for i := 0; i+2 < len(b) && len(out) < 128; i += 3 {
		at := base.Add(time.Duration(b[i+2]%32) * time.Minute)
		o := fuzzObservation("vm", b[i], base)
		o.Reason = breakerReasons[int(b[i+1]&7)%len(breakerReasons)]
		if b[i+1]&8 != 0 {
			o.RegisteredAt = at
		}
		if b[i+1]&16 == 0 {
			o.PhaseChangedAt = at
		}
		out = append(out, o)
	}
	return out
}

// FuzzRegistrationBreaker checks the breaker on arbitrary pools: it opens only when at least threshold
// VMs failed for a counted reason after the last registration; the order of the VMs does not matter;
// VMs that neither failed for a counted reason nor registered do not change it; a registration after
// every failure closes it; one more counted failure after every registration never closes it.
func FuzzRegistrationBreaker(f *testing.F) {
	f.Add([]byte{6, 0, 1, 6, 0, 2, 6, 0, 3}, uint8(3))
	f.Add([]byte{6, 0, 1, 6, 1, 2, 6, 3, 3, 3, 8, 4}, uint8(3))
	f.Add([]byte{3, 8, 1, 6, 0, 2, 6, 2, 3, 6 | bitDeleting, 0, 4}, uint8(3))
	f.Add([]byte{6, 4, 1, 6, 5, 2, 6, 16, 3}, uint8(1))
	f.Fuzz(func(t *testing.T, vmBytes []byte, thresholdByte uint8) {
		threshold := int(thresholdByte%8) + 1 // Options default 3; any positive count
		vms := fuzzBreakerVMs(vmBytes)
		got := registrationFailing(vms, threshold)

		var lastSuccess time.Time
		for _, o := range vms {
			if o.RegisteredAt.After(lastSuccess) {
				lastSuccess = o.RegisteredAt
			}
		}
		counted, lastFailure := 0, time.Time{}
		for _, o := range vms {
			if o.Phase == afv1.VMPhaseFailed && CountsTowardsBreaker(o.Reason) && !o.PhaseChangedAt.IsZero() {
				if o.PhaseChangedAt.After(lastSuccess) {
					counted++
				}
				if o.PhaseChangedAt.After(lastFailure) {
					lastFailure = o.PhaseChangedAt
				}
			}
		}
		if got != (counted >= threshold) {
			t.Fatalf("RegistrationFailing = %t with %d counted failure(s) after the last registration, threshold %d", got, counted, threshold)
		}

		rev := make([]VMObservation, len(vms))
		for i, o := range vms {
			rev[len(vms)-1-i] = o
		}
		if registrationFailing(rev, threshold) != got {
			t.Fatalf("the breaker depends on the order of the VMs")
		}

		var relevant []VMObservation
		for _, o := range vms {
			if !o.RegisteredAt.IsZero() || (o.Phase == afv1.VMPhaseFailed && CountsTowardsBreaker(o.Reason)) {
				relevant = append(relevant, o)
			}
		}
		if registrationFailing(relevant, threshold) != got {
			t.Fatalf("VMs that neither registered nor failed for a counted reason changed the breaker")
		}

		later := lastFailure
		if lastSuccess.After(later) {
			later = lastSuccess
		}
		later = later.Add(time.Minute)
		closed := append(append([]VMObservation(nil), vms...), VMObservation{Phase: afv1.VMPhaseAvailable, RegisteredAt: later})
		if registrationFailing(closed, threshold) {
			t.Fatalf("a registration after every failure left the breaker open")
		}
		more := append(append([]VMObservation(nil), vms...), VMObservation{Phase: afv1.VMPhaseFailed, Reason: afv1.ReasonRegistrationTimeout, PhaseChangedAt: later})
		if got && !registrationFailing(more, threshold) {
			t.Fatalf("one more failure closed the breaker")
		}
	})
}
