package planner

import "time"

// Debounce batches bursts of a changing value (the waiting count, a status's fingerprint): an action
// waits until the value has been stable for Idle, or Max after the burst opened, so a burst of
// AgentMachines becomes one batch of VMs. A negative Idle disables it.
type Debounce struct {
	Idle, Max time.Duration
}

// Burst is an open burst: the value last seen, when the burst opened and when the value last changed.
type Burst struct {
	Value             int
	First, LastChange time.Time
}

// Observe returns the burst after seeing value at now (b: the burst open so far, nil for none) and how
// long the action still waits (0: act now). Disabled, it returns b unchanged and 0.
func (d Debounce) Observe(b *Burst, value int, now time.Time) (*Burst, time.Duration) {
	if d.Idle < 0 {
		return b, 0
	}
	next := Burst{Value: value, First: now, LastChange: now}
	if b != nil {
		next = *b
		if next.Value != value {
			next.Value, next.LastChange = value, now
		}
	}
	wait := min(d.Idle-now.Sub(next.LastChange), d.Max-now.Sub(next.First))
	return &next, max(wait, 0)
}
