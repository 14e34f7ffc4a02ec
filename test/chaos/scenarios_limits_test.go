package chaos

import (
	"k8s.io/utils/ptr"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// Scenarios with a hard VM limit and with warm standby (issue 38). The limit is checked against the
// simulator, not the operator's bookkeeping: at every observation of a run the pool's VMs that exist in
// vCenter (whatever their phase: booting, bound, being released) are counted against spec.limits.maxVMs,
// and at every CreateVM_Task the VMs that exist plus the one being created.
const (
	maxVMsScenario  = "max-vms"
	standbyScenario = "standby"
	// limitMaxVMs is the max-vms pool's limit, below its demand (limitDemand): one Machine always waits.
	limitMaxVMs = 2
	limitDemand = 3
	// standbyVMs is the standby pool's spec.standby.
	standbyVMs = 1
)

func init() {
	scenarios = append(scenarios,
		&scenario{maxVMsScenario, downPoints, maxVMs},
		&scenario{standbyScenario, downPoints, standby},
	)
}

// maxVMs: demand 3 on a pool capped at 2 VMs (2 Machines served, 1 waits); demand drops to 1 and comes
// back to 3 while the surplus VM is still being released, then settles at 1. At no instant may more than
// 2 of the pool's VMs exist.
func maxVMs(r *run) error {
	if err := r.up(func(p *afv1.VsphereAgentPool) {
		p.Spec.Limits = &afv1.LimitsSpec{MaxVMs: ptr.To(int32(limitMaxVMs))}
	}, limitDemand); err != nil {
		return err
	}
	if err := r.scale(1); err != nil {
		return err
	}
	if err := r.await("a VM released", func(o *obs) bool { return len(o.liveVAs()) < limitMaxVMs || o.releasing() > 0 }); err != nil {
		return err
	}
	if err := r.scale(limitDemand); err != nil {
		return err
	}
	if err := r.await("demand back, served up to the limit", func(o *obs) bool { return r.served(o, limitDemand) }); err != nil {
		return err
	}
	return r.down(1)
}

// standby: a pool keeping 1 standby VM serves 1 Machine (2 VMs), then 2 (the standby is taken and
// refilled: 3 VMs), then none (the used VMs are destroyed, the standby VM stays).
func standby(r *run) error {
	if err := r.up(func(p *afv1.VsphereAgentPool) { p.Spec.Standby = standbyVMs }, 1); err != nil {
		return err
	}
	if err := r.up(nil, 2); err != nil {
		return err
	}
	return r.down(0)
}

// prepareLimits sets what the run's checks need to know of its pool before any check runs.
func (r *run) prepareLimits(name string) {
	switch name {
	case maxVMsScenario:
		r.maxVMs = limitMaxVMs
	case standbyScenario:
		r.standby = standbyVMs
	}
}

// wantVMs is how many VMs of the pool serve demand n: demand plus the standby, within maxVMs.
func (r *run) wantVMs(n int) int {
	want := n + r.standby
	if r.maxVMs > 0 && want > r.maxVMs {
		want = r.maxVMs
	}
	return want
}

// served: n live Machines, as many bound to an Agent as the pool's VMs allow (the rest wait), and the
// pool's VMs and live VsphereAgents exactly wantVMs(n).
func (r *run) served(o *obs, n int) bool {
	want := r.wantVMs(n)
	bound := 0
	for _, m := range o.machines {
		if !m.Deleting && m.Agent != "" {
			bound++
		}
	}
	return o.liveMachines() == n && bound == min(n, want) && len(o.vms) == want && len(o.liveVAs()) == want
}

// scaledDown: served(n) with nothing left over: no deleting Machine, VsphereAgent or surplus Agent.
func (r *run) scaledDown(o *obs, n int) bool {
	want := r.wantVMs(n)
	return r.served(o, n) && len(o.machines) == n && len(o.vas) == want && len(o.agents) == want
}

// checkLimitInstant counts the pool's VMs in the simulator against maxVMs (every observation).
func (r *run) checkLimitInstant(o *obs) {
	if r.maxVMs == 0 {
		return
	}
	r.momentMu.Lock()
	r.limitSamples++
	r.limitPeak = max(r.limitPeak, len(o.vms))
	r.momentMu.Unlock()
	if len(o.vms) > r.maxVMs {
		r.violate("limit exceeded: %d of the pool's VMs exist in vCenter, limits.maxVMs is %d", len(o.vms), r.maxVMs)
	}
}

// checkLimitCreate runs at a CreateVM_Task of the pool: the VMs that exist plus this one within maxVMs.
func (r *run) checkLimitCreate(name string, existing int) {
	if r.maxVMs == 0 {
		return
	}
	r.momentMu.Lock()
	r.limitSamples++
	r.limitPeak = max(r.limitPeak, existing+1)
	r.momentMu.Unlock()
	if existing+1 > r.maxVMs {
		r.momentViolation("limit exceeded: CreateVM_Task of %s while %d of the pool's VMs exist in vCenter, limits.maxVMs is %d", name, existing, r.maxVMs)
	}
}
