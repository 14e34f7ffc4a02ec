package main

import (
	"context"
	"fmt"
	"time"

	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

const (
	isoCacheTimeout = 60 * time.Second
	installTimeout  = 60 * time.Second
	// ejectGrace is how long the demo waits for a first sign of ejection from a build that may not
	// eject at all; ejectTimeout bounds the wait once ejection has started (or is required).
	ejectGrace   = 10 * time.Second
	ejectTimeout = 60 * time.Second
	holdWindow   = 2 * time.Second
)

// plateauTimeout grows with the number of VMs to create or clean up.
func plateauTimeout(n int) time.Duration { return 60*time.Second + time.Duration(n)*3*time.Second }

// scenario plays the autoscaler and checks the invariants at each plateau.
func (d *demo) scenario(ctx context.Context) error {
	if _, ok, err := d.waitFor(ctx, "waiting for the operator to cache the discovery ISO on the datastore", isoCacheTimeout,
		func(s *harness.Snapshot) bool { return s.Pool.Status.ISO != nil && s.Pool.Status.ISO.Path != "" }); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("the discovery ISO was not cached within %s (see the pool's ISOReady condition)", isoCacheTimeout)
	}
	s := d.t.Last()
	d.v.println("==> discovery ISO cached at %s", s.Pool.Status.ISO.Path)

	if err := d.fillStandby(ctx); err != nil {
		return err
	}
	plateaus := []int{d.cfg.first, d.cfg.peak}
	if d.cfg.first == d.cfg.peak {
		plateaus = plateaus[1:]
	}
	prev := 0
	for i, n := range plateaus {
		if err := d.scaleUp(ctx, prev, n, i == 0); err != nil {
			return err
		}
		prev = n
	}
	if err := d.installAndEject(ctx); err != nil {
		return err
	}
	if err := d.scaleDown(ctx, d.cfg.peak, d.cfg.final); err != nil {
		return err
	}
	scaleUps := len(plateaus)
	if d.cfg.standby > 0 {
		scaleUps++ // filling the standby is one more burst of new VMs
	}
	if err := d.finishStaticIPs(ctx, scaleUps, 1); err != nil {
		return err
	}
	for _, name := range d.t.DestroyedUnderDemand() {
		d.t.Violate("VM %s was destroyed while AgentMachines were still waiting (capacity released under demand, then created again)", name)
	}
	for _, msg := range d.t.Rebound() {
		d.t.Violate("%s: a VM released after use served a second Machine", msg)
	}
	// With standby the peak holds peak workers + the standby; each standby VM the provider takes is
	// replaced, so the run creates at most peak + standby VMs.
	most, plus := d.cfg.peak+d.cfg.standby, ""
	if d.cfg.standby > 0 {
		plus = fmt.Sprintf(" plus a standby of %d", d.cfg.standby)
	}
	if c := d.t.Created(); c > most {
		d.t.Violate("%d VMs were created for a NodePool that never asked for more than %d%s (no VM failed to register)", c, d.cfg.peak, plus)
	}
	if d.t.MaxVMs() > most {
		d.t.Violate("at some instant the simulator held %d VMs with the pool's marker; the NodePool never asked for more than %d%s", d.t.MaxVMs(), d.cfg.peak, plus)
	}
	d.checkISOTransport()
	return nil
}

func (d *demo) setReplicas(ctx context.Context, from, to int) error {
	d.v.println("==> autoscaler: NodePool %s replicas %d -> %d", d.sc.nodePool, from, to)
	return d.sc.world.SetReplicas(ctx, d.sc.nodePool, to)
}

// scaleUp plays one scale-up and waits for its plateau; with standby, the first one's figures go in the
// summary.
func (d *demo) scaleUp(ctx context.Context, from, n int, first bool) error {
	k := d.cfg.standby
	w := d.watchStandby(from, n)
	start := time.Now()
	if err := d.setReplicas(ctx, from, n); err != nil {
		return err
	}
	stage := fmt.Sprintf("scale %d -> %d: waiting for %d VMs, %d bound Agents, no waiting AgentMachine", from, n, n, n)
	if k > 0 {
		stage = fmt.Sprintf("scale %d -> %d: waiting for %d VMs (%d bound Agents + standby %d refilled), no waiting AgentMachine", from, n, n+k, n, k)
	}
	timeout := plateauTimeout(n - from + k)
	s, ok, err := d.waitFor(ctx, stage, timeout, func(s *harness.Snapshot) bool {
		w.observe(s)
		return s.ScaledUpWithStandby(n, k)
	})
	if err != nil {
		return err
	}
	w.finish(from, n, first)
	if !ok {
		d.t.Violate("plateau %d: after %s the simulator has %d VMs (want %d), %d bound Agents, %d VsphereAgents, %d waiting AgentMachines, %d ready standby VMs (want %d)",
			n, timeout, len(s.VMs), n+k, s.BoundAgents(), len(s.VAs), s.WaitingMachines(), s.StandbyReady(), k)
		return nil
	}
	if k > 0 {
		d.v.println("==> plateau %d reached in %.1fs: %d VMs in the simulator, %d Agents bound, %d ready standby", n, time.Since(start).Seconds(), len(s.VMs), s.BoundAgents(), s.StandbyReady())
		return d.hold(ctx, fmt.Sprintf("plateau %d: checking the VM count stays at %d (%d workers + standby %d)", n, n+k, n, k), n, holdWindow)
	}
	d.v.println("==> plateau %d reached in %.1fs: %d VMs in the simulator, %d Agents bound", n, time.Since(start).Seconds(), len(s.VMs), s.BoundAgents())
	return d.hold(ctx, fmt.Sprintf("plateau %d: checking the VM count stays at %d", n, n), n, holdWindow)
}

// installAndEject waits for the workers to install, then for the operator to eject their ISOs.
// Ejection is an invariant when it is required (the pool opts in, unless DEMO_REQUIRE_EJECT=0) or this
// build shows it ejects (some VM reached EjectionInProgress/Ejected); with DEMO_REQUIRE_EJECT=0 a build
// without ejection reports 0 ejected honestly and does not fail.
func (d *demo) installAndEject(ctx context.Context) error {
	n := d.cfg.peak
	start := time.Now()
	s, ok, err := d.waitFor(ctx, fmt.Sprintf("waiting for %d workers to install (Agent Installed=True)", n), installTimeout, func(s *harness.Snapshot) bool {
		return s.Installed() == n
	})
	if err != nil {
		return err
	}
	if !ok {
		d.t.Violate("only %d of %d workers installed within %s", s.Installed(), n, installTimeout)
		return nil
	}
	d.v.println("==> %d workers installed in %.1fs", n, time.Since(start).Seconds())

	start = time.Now()
	required := func() bool { return d.ejectRequired || d.t.EjectStarted() }
	for {
		timeout := ejectGrace
		if required() {
			timeout = ejectTimeout
		}
		s, ok, err = d.waitFor(ctx, fmt.Sprintf("waiting for the operator to eject %d ISOs", n), timeout-time.Since(start), func(s *harness.Snapshot) bool {
			return s.EjectedNow() == n || (!required() && d.t.EjectStarted())
		})
		if err != nil {
			return err
		}
		if ok && s.EjectedNow() < n { // ejection just started: wait on with the longer bound
			continue
		}
		break
	}
	switch {
	case s.EjectedNow() == n:
		d.v.println("==> %d ISOs ejected in %.1fs (ISOEjected=True/Ejected, CD-ROMs disconnected in the simulator)", n, time.Since(start).Seconds())
	case required():
		d.t.Violate("ISO ejection missing: %d of %d VMs ejected within %s (%s)", s.EjectedNow(), n, ejectTimeout, s.EjectionReasons())
	default:
		d.v.println("==> no VM started ejecting within %s (%s): reported as 0 ejected, not a violation (DEMO_REQUIRE_EJECT=0)",
			ejectGrace, s.EjectionReasons())
	}
	for _, name := range s.EjectedButAttached() {
		d.t.Violate("VsphereAgent %s reports ISOEjected=Ejected but its VM still has the ISO connected in the simulator", name)
	}
	if d.door != nil && d.t.EjectStarted() {
		d.v.println("==> %d of the VMs had guests locking the CD-ROM door; the operator answered %d lock questions (real vCenter shape: label button.yes, summary Yes)",
			len(d.door.locked), d.door.answered())
		for _, msg := range d.door.check(s) {
			d.t.Violate("%s", msg)
		}
	}
	return nil
}

// scaleDown plays the scale-down: the surplus workers' VMs go, a standby stays (it is full, so nothing
// released after use is kept for it).
func (d *demo) scaleDown(ctx context.Context, from, n int) error {
	k := d.cfg.standby
	start := time.Now()
	if err := d.setReplicas(ctx, from, n); err != nil {
		return err
	}
	stage := fmt.Sprintf("scale %d -> %d: waiting for %d surplus VMs and Agents to be cleaned up", from, n, from-n)
	holdStage := fmt.Sprintf("after scale-down: checking the VM count stays at %d", n)
	if k > 0 {
		stage += fmt.Sprintf(" (the %d standby VMs stay)", k)
		holdStage = fmt.Sprintf("after scale-down: checking the VM count stays at %d (%d workers + standby %d)", n+k, n, k)
	}
	s, ok, err := d.waitFor(ctx, stage, plateauTimeout(from-n), func(s *harness.Snapshot) bool {
		return s.ScaledDownWithStandby(n, k)
	})
	if err != nil {
		return err
	}
	switch {
	case !ok:
		d.t.Violate("after scale-down to %d and %s: %d VMs in the simulator (want %d), %d VsphereAgents, %d Agents (%d bound), %d Machines, %d ready standby VMs (want %d)",
			n, plateauTimeout(from-n), len(s.VMs), n+k, len(s.VAs), len(s.Agents), s.BoundAgents(), len(s.Machines), s.StandbyReady(), k)
	case k > 0:
		d.v.println("==> scale-down done in %.1fs: %d VMs destroyed, %d Agents deleted, %d workers kept, %d standby VMs kept (ready, unbound)",
			time.Since(start).Seconds(), from+k-len(s.VMs), from+k-len(s.Agents), n, s.StandbyReady())
	default:
		d.v.println("==> scale-down done in %.1fs: %d VMs destroyed, %d Agents deleted, %d workers kept", time.Since(start).Seconds(), from-len(s.VMs), from-len(s.Agents), n)
	}
	if err := d.hold(ctx, holdStage, n, holdWindow); err != nil {
		return err
	}
	s = d.t.Last()
	d.keptAtScaleDown(s)
	for _, leak := range s.Leaks() {
		d.t.Violate("leaked VM: %s", leak)
	}
	for _, m := range s.Machines {
		if m.Agent == "" {
			d.t.Violate("Machine %s lost its Agent after scale-down", m.Name)
		}
	}
	return nil
}
