package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// DEMO_STANDBY=n: the pool keeps n warm standby VMs (docs/standby.md); the scale-ups bind from them at once.

// useStandby sets spec.standby on the demo's pool.
func (d *demo) useStandby(pool *afv1.VsphereAgentPool) {
	if d.cfg.standby == 0 {
		return
	}
	pool.Spec.Standby = int32(d.cfg.standby)
	d.fig = harness.StandbyFigures{Desired: d.cfg.standby}
	d.t.SetStandby(d.fig)
	d.v.println("    DEMO_STANDBY=%d: spec.standby %d (VMs booted into discovery ahead of demand, their Agents registered, validated and approved for the pool, unbound)",
		d.cfg.standby, d.cfg.standby)
}

// fillStandby waits, before any demand, for the pool's standby to be full: spec.standby VMs whose Agents
// the provider could bind, StandbyReady=True/StandbyFull, and no other VM.
func (d *demo) fillStandby(ctx context.Context) error {
	k := d.cfg.standby
	if k == 0 {
		return nil
	}
	start := time.Now()
	timeout := plateauTimeout(k)
	stage := fmt.Sprintf("standby %d: waiting for %d VMs whose Agents are registered, validated, approved and unbound (StandbyReady=True/StandbyFull)", k, k)
	s, ok, err := d.waitFor(ctx, stage, timeout, func(s *harness.Snapshot) bool {
		c := apimeta.FindStatusCondition(s.Pool.Status.Conditions, afv1.ConditionStandbyReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == afv1.ReasonStandbyFull && s.StandbyReady() == k && len(s.VMs) == k
	})
	if err != nil {
		return err
	}
	if !ok {
		d.t.Violate("standby %d not full within %s: %d ready standby VMs, %d VMs in the simulator, StandbyReady %s", k, timeout, s.StandbyReady(), len(s.VMs), standbyCondition(s))
		return nil
	}
	d.v.println("==> standby full in %.1fs: %d VMs booted into discovery, Agents %s ready for the provider (StandbyReady %s, status.standby ready %d/%d)",
		time.Since(start).Seconds(), k, strings.Join(shortNames(s.StandbyAgents()), ", "), standbyCondition(s), readyOf(s), k)
	return d.hold(ctx, fmt.Sprintf("standby %d, no demand: checking the VM count stays at %d", k, k), 0, holdWindow)
}

// standbyWatch measures one scale-up served from standby: how many of the Agents that were ready standby
// when it began got bound, and when; when the standby was full again.
type standbyWatch struct {
	d      *demo
	start  time.Time
	from   int
	agents map[string]bool // ready standby Agents at the scale-up
	// machinesIn is when the first new Machine was seen: what CAPI and the world take before any Agent
	// can be bound, standby or not.
	machinesIn time.Duration
	// want is how many of them the scale-up should take at once: all it asks for, up to the standby.
	want             int
	bound            int
	boundIn          time.Duration
	refilledIn       time.Duration
	announcedBinding bool
}

// watchStandby starts measuring a scale-up from `from` to n Machines (nil without standby).
func (d *demo) watchStandby(from, n int) *standbyWatch {
	if d.cfg.standby == 0 || d.t.Last() == nil {
		return nil
	}
	w := &standbyWatch{d: d, start: time.Now(), from: from, agents: map[string]bool{}}
	for _, a := range d.t.Last().StandbyAgents() {
		w.agents[a] = true
	}
	w.want = min(n-from, len(w.agents))
	return w
}

// observe follows one snapshot of the scale-up and narrates the binding from standby and the refill.
func (w *standbyWatch) observe(s *harness.Snapshot) {
	if w == nil {
		return
	}
	if w.machinesIn == 0 && s.LiveMachines() > w.from {
		w.machinesIn = time.Since(w.start)
	}
	n := 0
	for _, a := range s.Agents {
		if w.agents[a.Name] && a.AgentMachine != "" {
			n++
		}
	}
	if n > w.bound {
		w.bound, w.boundIn = n, time.Since(w.start)
	}
	if !w.announcedBinding && w.bound >= w.want {
		w.announcedBinding = true
		w.d.v.println("==> %d Agents bound from standby %.1fs after the scale-up, %.1fs after its first Machine appeared (no VM created, booted or registered for them); %d AgentMachines wait for new VMs",
			w.bound, w.boundIn.Seconds(), (w.boundIn - w.machinesIn).Seconds(), s.WaitingMachines())
	}
	if w.announcedBinding && w.refilledIn == 0 && s.StandbyReady() == w.d.cfg.standby {
		w.refilledIn = time.Since(w.start)
		w.d.v.println("==> standby refilled to %d %.1fs after the scale-up: Agents %s ready", w.d.cfg.standby, w.refilledIn.Seconds(), strings.Join(shortNames(s.StandbyAgents()), ", "))
	}
}

// finish checks the scale-up took its Agents from the standby; first records the figures for the summary.
func (w *standbyWatch) finish(from, n int, first bool) {
	if w == nil {
		return
	}
	if w.bound < w.want {
		w.d.t.Violate("scale %d -> %d: only %d of the %d ready standby Agents were bound, want %d (demand served by new VMs while standby waited)",
			from, n, w.bound, len(w.agents), w.want)
	}
	if first {
		w.d.fig.ReadyBefore, w.d.fig.BoundFromStandby, w.d.fig.BoundIn, w.d.fig.RefilledIn = len(w.agents), w.bound, w.boundIn, w.refilledIn
		w.d.t.SetStandby(w.d.fig)
	}
}

// keptAtScaleDown records the ready standby VMs left after the scale-down.
func (d *demo) keptAtScaleDown(s *harness.Snapshot) {
	if d.cfg.standby == 0 {
		return
	}
	d.fig.KeptAtScaleDown = s.StandbyReady()
	d.t.SetStandby(d.fig)
}

func standbyCondition(s *harness.Snapshot) string {
	c := apimeta.FindStatusCondition(s.Pool.Status.Conditions, afv1.ConditionStandbyReady)
	if c == nil {
		return "not set"
	}
	return string(c.Status) + "/" + c.Reason
}

func readyOf(s *harness.Snapshot) int32 {
	if s.Pool.Status.Standby == nil {
		return 0
	}
	return s.Pool.Status.Standby.Ready
}

func shortNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, short(n, 8))
	}
	return out
}
