package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// stage is one step of the pipeline from demand to a bound Agent; each is done by the operator or by
// the simulated world, and a later stage can only follow an earlier one.
type stage int

const (
	stageMachines   stage = iota // AgentMachines rendered (world: HyperShift/CAPI)
	stageAsked                   // AgentMachines the Agent CAPI provider answered: waiting (NoSuitableAgents) or bound
	stageRequested               // VsphereAgents (operator: pool controller)
	stageCreated                 // VMs in the simulator (operator: VsphereAgent controller)
	stagePoweredOn               // of those, powered on (operator: VsphereAgent controller)
	stageRegistered              // Agents (world: assisted-service)
	stagePrepared                // Agents approved and labelled for their pool (operator: VsphereAgent controller)
	stageBound                   // Agents reserved for an AgentMachine (world: Agent CAPI provider)
	numStages
)

const (
	ownerOperator = "operator"
	ownerWorld    = "world"
)

var stages = [numStages]struct{ name, owner, actor string }{
	{"machines", ownerWorld, "HyperShift/CAPI rendering Machines"},
	{"asked", ownerWorld, "Agent CAPI provider marking AgentMachines NoSuitableAgents (the operator's demand)"},
	{"requested", ownerOperator, "pool controller"},
	{"created", ownerOperator, "VsphereAgent controller"},
	{"powered on", ownerOperator, "VsphereAgent controller"},
	{"registered", ownerWorld, "assisted-service registering Agents"},
	{"prepared", ownerOperator, "VsphereAgent controller"},
	{"bound", ownerWorld, "Agent CAPI provider binding"},
}

func (s stage) String() string { return stages[s].name }

// controllerOf is the operator controller that moves an operator stage.
func controllerOf(s stage) string {
	if s == stageRequested {
		return "pool"
	}
	return "vm"
}

// opSignals is what the operator's own metrics and status said at a sample.
type opSignals struct {
	// Queue is each controller's workqueue depth (items ready, not those waiting for a delay),
	// Busy its active workers, Workers its worker count; keys "pool" and "vm".
	Queue, Busy, Workers map[string]int
	// Retries counts rate-limited requeues (backoff: passes that ended in an error or Requeue) so
	// far, both controllers; RequeueAfter timers are not among them.
	Retries int
	// Breakers is how many pools report RegistrationHealthy=False (creation stopped).
	Breakers int
	// Throttled counts API requests refused with 429 so far.
	Throttled int
}

// worldSignals is the world driver's own pacing at a sample.
type worldSignals struct {
	// Phase is the phase its pass runs now, for PhaseFor; PassFor is how long the running pass has
	// run (0 between passes); LastPass the last finished pass; Errors the failed passes so far.
	Phase            string
	PhaseFor         time.Duration
	PassFor          time.Duration
	LastPass         time.Duration
	LongestPhase     string
	LongestPhaseTook time.Duration
	Errors           int
	LastError        string
	// Loops is each behaviour's pace when the world runs them as independent loops (nil otherwise).
	Loops map[string]loopSignals
}

// loopSignals is one world behaviour's pace at a sample.
type loopSignals struct {
	// RunningFor is how long its running run has run (0 between runs); LongestRun its longest so
	// far; Runs how many finished.
	RunningFor, LongestRun time.Duration
	Runs                   int
}

// loopOf is the world behaviour (a loop of the world driver) that moves a world stage.
func loopOf(s stage) string {
	switch s {
	case stageMachines:
		return "nodepools"
	case stageRegistered:
		return "registration"
	default:
		return "binding"
	}
}

// sample is the pipeline at one moment since the demand arrived.
type sample struct {
	At     time.Duration
	Counts [numStages]int
	Op     opSignals
	World  worldSignals
}

// plateau is a stage that did not move for a while, and who held it.
type plateau struct {
	Stage    stage
	Count    int
	From, To time.Duration
	Holder   stage
	Owner    string
	Cause    string
	// OperatorIdle: the operator held it with work waiting and nothing in flight (its queue empty and
	// workers idle, or items queued while workers were free): a wait of its own making, which the bench
	// does not accept (issue #39).
	OperatorIdle bool
}

func (p plateau) String() string {
	held := fmt.Sprintf("held by its own step (%s: %s)", p.Owner, p.Cause)
	if p.Holder != p.Stage {
		held = fmt.Sprintf("held by %s (%s: %s)", p.Holder, p.Owner, p.Cause)
	}
	return fmt.Sprintf("plateau: %s stayed at %d for %.0f s (%.0f s to %.0f s), %s",
		p.Stage, p.Count, (p.To - p.From).Seconds(), p.From.Seconds(), p.To.Seconds(), held)
}

// holderAt is the stage that limits s at one sample: s itself when the stage before it has work
// waiting for it, else (recursively) the stage before. The autoscaler's demand feeds the first stage.
func holderAt(c [numStages]int, target int, s stage) stage {
	for s > 0 && c[s-1] <= c[s] {
		s--
	}
	if s == 0 && target <= c[0] {
		return stageMachines
	}
	return s
}

// plateaus finds every stage that stayed below target without moving for at least minFor, and
// names what held it. A plateau of the last stage is always reported (it is what the user waits
// for); one of an earlier stage only when that stage held itself (it had work and did not move),
// since otherwise the stage that held it has its own plateau or shows in the last stage's.
func plateaus(samples []sample, target int, minFor time.Duration) []plateau {
	var out []plateau
	for s := stage(0); s < numStages; s++ {
		for i := 0; i < len(samples); {
			j := i
			for j+1 < len(samples) && samples[j+1].Counts[s] == samples[i].Counts[s] {
				j++
			}
			if samples[i].Counts[s] < target && samples[j].At-samples[i].At >= minFor {
				window := samples[i : j+1]
				holder := majorityHolder(window, target, s)
				if holder == s || s == stageBound {
					owner, cause, idle := attribute(window, holder)
					out = append(out, plateau{Stage: s, Count: samples[i].Counts[s], From: samples[i].At, To: samples[j].At,
						Holder: holder, Owner: owner, Cause: cause, OperatorIdle: idle})
				}
			}
			i = j + 1
		}
	}
	sortPlateaus(out)
	return out
}

// majorityHolder is the holder for most of the window's time.
func majorityHolder(window []sample, target int, s stage) stage {
	var held [numStages]time.Duration
	for k := range window {
		d := time.Duration(1)
		if k+1 < len(window) {
			d = window[k+1].At - window[k].At
		}
		held[holderAt(window[k].Counts, target, s)] += d
	}
	best := s
	for h := stage(0); h <= s; h++ {
		if held[h] > held[best] {
			best = h
		}
	}
	return best
}

// attribute names the owner of a holding stage and the cause the signals point to, and whether the
// operator sat idle through it.
func attribute(window []sample, holder stage) (owner, cause string, operatorIdle bool) {
	first, last := window[0], window[len(window)-1]
	if stages[holder].owner == ownerWorld {
		return ownerWorld, worldCause(window, holder), false
	}
	ctl := controllerOf(holder)
	maxQueue, allBusy := 0, 0
	breakers := 0
	for _, w := range window {
		maxQueue = max(maxQueue, w.Op.Queue[ctl])
		if w.Op.Workers[ctl] > 0 && w.Op.Busy[ctl] >= w.Op.Workers[ctl] {
			allBusy++
		}
		breakers = max(breakers, w.Op.Breakers)
	}
	switch {
	case breakers > 0:
		return ownerOperator, fmt.Sprintf("breaker: %d pool(s) RegistrationHealthy=False, creation stopped", breakers), false
	case allBusy*2 > len(window):
		return ownerOperator, fmt.Sprintf("worker count: all %d %s workers busy, queue up to %d (%s)",
			last.Op.Workers[ctl], ctl, maxQueue, stages[holder].actor), false
	case maxQueue > 0 && allBusy == 0:
		return ownerOperator, fmt.Sprintf("queue: up to %d %s items waiting while workers were free", maxQueue, ctl), true
	case last.Op.Throttled > first.Op.Throttled:
		return ownerOperator, fmt.Sprintf("rate limiter: %d API requests throttled (429)", last.Op.Throttled-first.Op.Throttled), false
	case last.Op.Retries > first.Op.Retries:
		return ownerOperator, fmt.Sprintf("backoff: %d rate-limited requeues", last.Op.Retries-first.Op.Retries), false
	default:
		return ownerOperator, fmt.Sprintf("timers: %s queue empty and workers idle (debounce, status batching or a requeue delay)", ctl), true
	}
}

// worldCause names the world driver's own timing behind a world-held stage.
func worldCause(window []sample, holder stage) string {
	var longestPass time.Duration
	phase, phaseTook := "", time.Duration(0)
	failed, lastErr := 0, ""
	for _, w := range window {
		longestPass = max(longestPass, w.World.PassFor, w.World.LastPass)
		if w.World.PhaseFor > phaseTook {
			phase, phaseTook = w.World.Phase, w.World.PhaseFor
		}
		if w.World.LongestPhaseTook > phaseTook {
			phase, phaseTook = w.World.LongestPhase, w.World.LongestPhaseTook
		}
		failed, lastErr = w.World.Errors-window[0].World.Errors, w.World.LastError
	}
	var parts []string
	parts = append(parts, stages[holder].actor)
	if loop := loopOf(holder); window[len(window)-1].World.Loops != nil {
		var longest time.Duration
		runs := window[len(window)-1].World.Loops[loop].Runs - window[0].World.Loops[loop].Runs
		for _, w := range window {
			l := w.World.Loops[loop]
			longest = max(longest, l.RunningFor, l.LongestRun)
		}
		parts = append(parts, fmt.Sprintf("its %q loop ran %d times in the window, runs up to %.1f s", loop, runs, longest.Seconds()))
	} else if longestPass > 0 {
		parts = append(parts, fmt.Sprintf("the world driver's serial pass took up to %.0f s (slowest phase %q, %.0f s)",
			longestPass.Seconds(), phase, phaseTook.Seconds()))
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d of its passes failed (last: %s)", failed, lastErr))
	}
	return strings.Join(parts, "; ")
}

func sortPlateaus(ps []plateau) {
	sort.SliceStable(ps, func(i, j int) bool {
		return ps[i].From < ps[j].From || (ps[i].From == ps[j].From && ps[i].Stage < ps[j].Stage)
	})
}
