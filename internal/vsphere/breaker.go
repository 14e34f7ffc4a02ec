package vsphere

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// BreakerOptions tune the per-vCenter circuit breakers of a SessionCache. The zero value is usable.
type BreakerOptions struct {
	// Threshold is the number of consecutive timeouts or connection failures that open a vCenter's
	// breaker (default 5).
	Threshold int
	// CoolDown is how long an open breaker fails calls fast before it lets one probe call through
	// (default 30 s).
	CoolDown time.Duration
}

// BreakerState is where a vCenter's circuit breaker stands.
type BreakerState string

const (
	// BreakerClosed means calls go to vCenter.
	BreakerClosed BreakerState = "Closed"
	// BreakerOpen means calls fail fast with ErrCircuitOpen until the cool-down ends.
	BreakerOpen BreakerState = "Open"
	// BreakerHalfOpen means the cool-down ended: one probe call goes to vCenter, the others fail fast.
	BreakerHalfOpen BreakerState = "HalfOpen"
)

// breaker is one vCenter's circuit breaker. Closed, it counts consecutive failures (timeouts,
// unreachable) and opens at the threshold; open, it fails every call until the cool-down has passed on
// the clock; then one probe call is let through (half-open): its success closes the breaker, its failure
// opens it for another cool-down, and a probe that tells nothing (cancelled by its caller) frees the
// slot for the next call. Results of calls admitted before the breaker opened are ignored once it is
// open. While not closed the metric agent_forge_vcenter_circuit_open{vcenter} is 1.
type breaker struct {
	vcenter   string
	threshold int
	coolDown  time.Duration
	clock     clock.PassiveClock

	mu       sync.Mutex
	state    BreakerState
	failures int
	openedAt time.Time
	probing  bool
}

func newBreaker(vcenter string, opts BreakerOptions, clk clock.PassiveClock) *breaker {
	b := &breaker{vcenter: vcenter, threshold: opts.Threshold, coolDown: opts.CoolDown, clock: clk, state: BreakerClosed}
	metrics.VCenterCircuitOpen.WithLabelValues(vcenter).Set(0)
	return b
}

// admit asks to send one call. probe is true when the call is the half-open probe; err is a
// *CircuitOpenError when the call must fail fast.
func (b *breaker) admit() (probe bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerOpen:
		if b.clock.Since(b.openedAt) < b.coolDown {
			return false, b.openErrorLocked()
		}
		b.state = BreakerHalfOpen
		b.probing = true
		return true, nil
	case BreakerHalfOpen:
		if b.probing {
			return false, b.openErrorLocked()
		}
		b.probing = true
		return true, nil
	}
	return false, nil
}

// done records the outcome of an admitted call.
func (b *breaker) done(probe bool, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerClosed:
		switch o {
		case outcomeSuccess:
			b.failures = 0
		case outcomeFailure:
			b.failures++
			if b.failures >= b.threshold {
				b.openLocked()
			}
		}
	case BreakerHalfOpen:
		if !probe {
			return
		}
		b.probing = false
		switch o {
		case outcomeSuccess:
			b.state, b.failures = BreakerClosed, 0
			metrics.VCenterCircuitOpen.WithLabelValues(b.vcenter).Set(0)
		case outcomeFailure:
			b.failures++
			b.openLocked()
		}
	}
}

func (b *breaker) openLocked() {
	b.state = BreakerOpen
	b.openedAt = b.clock.Now()
	metrics.VCenterCircuitOpen.WithLabelValues(b.vcenter).Set(1)
}

func (b *breaker) openErrorLocked() error {
	return &CircuitOpenError{VCenter: b.vcenter, Failures: b.failures, RetryAt: b.openedAt.Add(b.coolDown)}
}

// State is the breaker's state as the next call would see it (Open turns HalfOpen once the cool-down
// has passed).
func (b *breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && b.clock.Since(b.openedAt) >= b.coolDown {
		return BreakerHalfOpen
	}
	return b.state
}
