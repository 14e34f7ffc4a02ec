package planner

import (
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Breaker is the registration breaker's memory between passes (the pool keeps it in
// status.registrationBreaker). The Failed VsphereAgents are its evidence, but they expire after
// FailedRetention: a breaker that only counted them closed again with each expiry, and a bootable
// image whose hosts never register cost a full burst of VMs every retention period, for ever.
type Breaker struct {
	// Trips counts the trips in a row, without a registration in between.
	Trips int
	// HeldUntil: creation is held until then; afterwards one VM at a time probes (half-open).
	HeldUntil time.Time
	// Since is the last trip or reset: failures before it are not counted again.
	Since time.Time
	// Generation and Image are the pool's generation and discovery image (SHA-256) at the last trip.
	Generation int64
	Image      string
}

// Breaker states.
const (
	BreakerClosed  = ""
	BreakerOpen    = "Open"
	BreakerProbing = "Probing"
)

// BreakerSettings are the registration breaker's settings: Threshold failures in a row trip a closed breaker; each trip holds creation for
// Backoff.Next(trips) (doubling per trip in a row, at most Backoff.Ceiling).
type BreakerSettings struct {
	Threshold int
	Backoff   Backoff
}

// stepBreaker moves the breaker one pass on. Rules, in order:
//  1. reset (closed, its memory cleared): an Agent of the pool registered after the last trip, or the
//     pool's spec (generation) or discovery image changed since;
//  2. closed: Threshold counted failures (CountsTowardsBreaker) after the last registration and after
//     Since trip it;
//  3. open: held until HeldUntil;
//  4. probing (the hold is over): one counted failure of a VM that failed after the hold ended trips it
//     again, holding twice as long; otherwise creation goes on, one VM in flight at a time.
//
// A trip holds creation for Backoff.Next(trips) from now.
func stepBreaker(prev Breaker, vms []VMObservation, now time.Time, generation int64, image string, set BreakerSettings) (Breaker, string) {
	b := prev
	success := lastRegistration(vms)
	if b.Trips > 0 {
		switch {
		case success.After(b.Since):
			b = Breaker{Since: success}
		case b.Generation != generation, image != "" && b.Image != "" && image != b.Image:
			b = Breaker{Since: now} // what failed before the change says nothing about the new spec or image
		}
	}
	after := success
	if b.Since.After(after) {
		after = b.Since
	}
	trip := func() (Breaker, string) {
		n := b.Trips + 1
		return Breaker{Trips: n, HeldUntil: now.Add(set.Backoff.Next(n)), Since: now, Generation: generation, Image: image}, BreakerOpen
	}
	switch {
	case b.Trips == 0:
		if set.Threshold > 0 && failuresAfter(vms, after) >= set.Threshold {
			return trip()
		}
		return b, BreakerClosed
	case now.Before(b.HeldUntil):
		return b, BreakerOpen
	}
	if b.HeldUntil.After(after) {
		after = b.HeldUntil.Add(-time.Nanosecond) // a probe's failure, at or after the hold's end
	}
	if failuresAfter(vms, after) >= 1 {
		return trip()
	}
	return b, BreakerProbing
}

// lastRegistration is when the pool's VMs last registered an Agent (zero: never).
func lastRegistration(vms []VMObservation) time.Time {
	var last time.Time
	for _, o := range vms {
		if o.RegisteredAt.After(last) {
			last = o.RegisteredAt
		}
	}
	return last
}

// failuresAfter counts the Failed VMs with a reason the breaker counts that failed after t.
func failuresAfter(vms []VMObservation, t time.Time) int {
	n := 0
	for _, o := range vms {
		if o.Phase == afv1.VMPhaseFailed && CountsTowardsBreaker(o.Reason) && !o.PhaseChangedAt.IsZero() && o.PhaseChangedAt.After(t) {
			n++
		}
	}
	return n
}

// breaker is this snapshot's breaker after the pass, and its state.
func (s Snapshot) breaker() (Breaker, string) {
	return stepBreaker(s.Breaker, observations(s.VMs), s.Now, s.Generation, s.CurrentImage.SHA256,
		BreakerSettings{Threshold: s.RegistrationFailureThreshold, Backoff: s.BreakerBackoff})
}
