package pool

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// breakerOf reads the registration breaker's memory from the pool's status.
func breakerOf(st *afv1.RegistrationBreakerStatus) planner.Breaker {
	if st == nil {
		return planner.Breaker{}
	}
	b := planner.Breaker{Trips: int(st.Trips), Generation: st.ObservedGeneration, Image: st.Image}
	if st.HeldUntil != nil {
		b.HeldUntil = st.HeldUntil.Time
	}
	if st.Since != nil {
		b.Since = st.Since.Time
	}
	return b
}

// breakerStatus is the memory to keep in the status (nil: a breaker that never tripped, nothing to keep).
func breakerStatus(b planner.Breaker) *afv1.RegistrationBreakerStatus {
	if b.Trips == 0 && b.Since.IsZero() {
		return nil
	}
	st := &afv1.RegistrationBreakerStatus{Trips: int32(b.Trips), ObservedGeneration: b.Generation, Image: b.Image}
	if !b.HeldUntil.IsZero() {
		st.HeldUntil = &metav1.Time{Time: b.HeldUntil}
	}
	if !b.Since.IsZero() {
		st.Since = &metav1.Time{Time: b.Since}
	}
	return st
}

// setRegistrationOK writes the breaker's memory and condition RegistrationOK: creation held (and until
// when), a probe under way, or healthy. A new trip is announced with an Event.
func (r *Reconciler) setRegistrationOK(s *poolScope) {
	p := s.pool
	st := &p.Status
	if s.plan.Breaker == nil { // no plan this pass: the memory stays as it was
		return
	}
	b := *s.plan.Breaker
	prevTrips := int32(0)
	if st.RegistrationBreaker != nil {
		prevTrips = st.RegistrationBreaker.Trips
	}
	st.RegistrationBreaker = breakerStatus(b)
	until := b.HeldUntil.UTC().Format(time.RFC3339)
	switch s.plan.BreakerState {
	case planner.BreakerOpen:
		msg := fmt.Sprintf("VMs keep failing (no Agent registered within the registration timeout, or vCenter refused their creation: see the Failed VsphereAgents' reasons): "+
			"the breaker tripped %d time(s) in a row and holds VM creation until %s, then one VM at a time probes the image (each trip in a row doubles the hold, at most %s). "+
			"An Agent that registers, a new discovery image or a change of the pool's spec resets it; check the discovery ISO boots and reaches assisted-service",
			b.Trips, until, r.Opts.RegistrationBackoffMax)
		conditions.SetCondition(&st.Conditions, afv1.ConditionRegistrationOK, false, afv1.ReasonRegistrationFailing, msg, p.Generation)
		if int32(b.Trips) != prevTrips {
			r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonRegistrationFailing, events.ActionCreateVM,
				"registration breaker tripped (%d in a row): no VM is created until %s", b.Trips, until)
		}
	case planner.BreakerProbing:
		conditions.SetCondition(&st.Conditions, afv1.ConditionRegistrationOK, false, afv1.ReasonRegistrationProbing,
			fmt.Sprintf("the registration breaker tripped %d time(s) in a row; its hold ended at %s and one VM at a time probes the image until an Agent registers", b.Trips, until), p.Generation)
	default:
		conditions.SetCondition(&st.Conditions, afv1.ConditionRegistrationOK, true, afv1.ReasonRegistrationHealthy, "VMs register their Agents", p.Generation)
	}
}
