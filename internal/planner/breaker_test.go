package planner

import (
	"fmt"
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func TestStepBreaker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	failed := func(m int) VMObservation {
		return VMObservation{Phase: afv1.VMPhaseFailed, Reason: afv1.ReasonRegistrationTimeout, PhaseChangedAt: at(m)}
	}
	registered := func(m int) VMObservation { return VMObservation{Phase: afv1.VMPhaseAvailable, RegisteredAt: at(m)} }
	set := BreakerSettings{Threshold: 3, Backoff: Backoff{Base: time.Hour, Ceiling: 24 * time.Hour}}
	tripped := func(trips, m int, hold time.Duration) Breaker {
		return Breaker{Trips: trips, Since: at(m), HeldUntil: at(m).Add(hold), Generation: 1, Image: "img"}
	}
	tests := []struct {
		name      string
		prev      Breaker
		vms       []VMObservation
		now       int
		gen       int64
		image     string
		want      Breaker
		wantState string
	}{
		{name: "closed, below the threshold", vms: []VMObservation{failed(1), failed(2)}, now: 5, want: Breaker{}},
		{name: "closed, threshold reached: trips for the base backoff", vms: []VMObservation{failed(1), failed(2), failed(3)}, now: 5,
			want: tripped(1, 5, time.Hour), wantState: BreakerOpen},
		{name: "open: held until its time", prev: tripped(1, 5, time.Hour), vms: []VMObservation{failed(1), failed(2), failed(3)}, now: 30,
			want: tripped(1, 5, time.Hour), wantState: BreakerOpen},
		{name: "the Failed VsphereAgents expired: the memory holds all the same", prev: tripped(1, 5, time.Hour), now: 30,
			want: tripped(1, 5, time.Hour), wantState: BreakerOpen},
		{name: "hold over, nothing failed since: one probe at a time", prev: tripped(1, 5, time.Hour), vms: []VMObservation{failed(1), failed(2), failed(3)}, now: 66,
			want: tripped(1, 5, time.Hour), wantState: BreakerProbing},
		{name: "a VM failing during the hold (in flight at the trip) does not trip it again", prev: tripped(1, 5, time.Hour), vms: []VMObservation{failed(20)}, now: 70,
			want: tripped(1, 5, time.Hour), wantState: BreakerProbing},
		{name: "the probe fails: trips again, twice as long", prev: tripped(1, 5, time.Hour), vms: []VMObservation{failed(90)}, now: 91,
			want: tripped(2, 91, 2*time.Hour), wantState: BreakerOpen},
		{name: "the hold doubles up to its ceiling", prev: tripped(6, 5, 32*time.Hour), vms: []VMObservation{failed(2000)}, now: 2001,
			want: tripped(7, 2001, 24*time.Hour), wantState: BreakerOpen},
		{name: "an Agent registered after the trip: reset", prev: tripped(2, 5, 2*time.Hour), vms: []VMObservation{registered(80), failed(1)}, now: 90,
			want: Breaker{Since: at(80)}},
		{name: "after a reset by registration, failures since count afresh", prev: tripped(2, 5, 2*time.Hour),
			vms: []VMObservation{registered(80), failed(81), failed(82), failed(83)}, now: 90, want: tripped(1, 90, time.Hour), wantState: BreakerOpen},
		{name: "a spec change resets; old failures do not count", prev: tripped(2, 5, 2*time.Hour), vms: []VMObservation{failed(1), failed(2), failed(3)}, now: 30, gen: 2,
			want: Breaker{Since: at(30)}},
		{name: "a new image resets", prev: tripped(2, 5, 2*time.Hour), now: 30, image: "new", want: Breaker{Since: at(30)}},
		{name: "an image not known yet resets nothing", prev: tripped(2, 5, 2*time.Hour), now: 30, image: "-", want: tripped(2, 5, 2*time.Hour), wantState: BreakerOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen, image := tt.gen, tt.image
			if gen == 0 {
				gen = 1
			}
			switch image {
			case "":
				image = "img"
			case "-":
				image = ""
			}
			want := tt.want
			if want.Trips > 0 && want.Since.Equal(at(tt.now)) {
				want.Generation, want.Image = gen, image
			}
			got, state := stepBreaker(tt.prev, tt.vms, at(tt.now), gen, image, set)
			if got != want || state != tt.wantState {
				t.Errorf("stepBreaker = %+v %q, want %+v %q", got, state, want, tt.wantState)
			}
		})
	}
}

// TestBreakerBound plays a pool whose hosts never register for 24 hours, pass by pass on a simulated
// clock: demand 20, the default limits (maxConcurrentProvisioning 10), registration timeout 20 min,
// Failed VsphereAgents expiring after 1 h, the breaker's defaults (3 failures, hold 1 h doubling to
// 24 h). Without the breaker's memory this created a burst every ~80 min; docs/pools.md states the bound:
// maxConcurrentProvisioning + threshold − 1 for the first trip, then one probe per hold:
// 10 + 2 + 4 = 16 VMs in 24 h (holds of 1, 2, 4, 8 h end within the day).
func TestBreakerBound(t *testing.T) {
	created := simulateUnregistered(true)
	if want := 10 + 3 - 1 + 4; created > want || created < 10+4 {
		t.Fatalf("%d VMs created in 24 h, want the first burst and 4 probes, at most %d", created, want)
	}
	// The same day without the breaker's memory (the breaker as it was: open only while enough Failed
	// VsphereAgents exist): a burst whenever they expire. The bound above is what the memory buys.
	if without := simulateUnregistered(false); without <= 10+3-1+4 {
		t.Fatalf("without the memory %d VMs were created: the simulation does not tell the two apart", without)
	} else {
		t.Logf("24 h: %d VMs with the breaker's memory, %d without", created, without)
	}
}

// simulateUnregistered returns how many VMs the planner creates in 24 h of one-minute passes (see
// TestBreakerBound); keepMemory false forgets the breaker's memory between passes.
func simulateUnregistered(keepMemory bool) int {
	const (
		step    = time.Minute
		timeout = 20 * time.Minute
		demand  = 20
	)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	conc := int32(10)
	var vms []VM
	var breaker Breaker
	created := 0
	for now := t0; now.Before(t0.Add(24 * time.Hour)); now = now.Add(step) {
		// The VsphereAgent controller: a VM unregistered for the timeout fails.
		for i := range vms {
			if vms[i].Phase == afv1.VMPhaseProvisioning && now.Sub(vms[i].CreatedAt) >= timeout {
				vms[i].Phase, vms[i].Reason, vms[i].PhaseChangedAt = afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout, now
			}
		}
		d := Plan(Snapshot{Now: now, Waiting: demand, VMs: vms, MaxConcurrentProvisioning: &conc, RemoveSurplus: true,
			RegistrationFailureThreshold: 3, FailedRetention: time.Hour, Debounce: Debounce{Idle: -1}, Domains: []Domain{{}},
			Breaker: breaker, Generation: 1, BreakerBackoff: Backoff{Base: time.Hour, Ceiling: 24 * time.Hour}})
		if keepMemory {
			breaker = *d.Breaker
		}
		expired := map[string]bool{}
		for _, n := range d.Expire {
			expired[n] = true
		}
		kept := vms[:0]
		for _, vm := range vms {
			if !expired[vm.Name] {
				kept = append(kept, vm)
			}
		}
		vms = kept
		for range d.Creates {
			created++
			vms = append(vms, VM{VMObservation: VMObservation{Name: fmt.Sprintf("v%d", created), Phase: afv1.VMPhaseProvisioning, CreatedAt: now}, HasVM: true})
		}
	}
	return created
}
