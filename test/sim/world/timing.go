package world

import (
	"maps"
	"time"
)

// PassTiming is the world driver's own pacing. In serial passes (Step, Run) one slow phase (say, a
// thousand Agents registered one by one) holds every other behaviour until the pass ends; in loop
// mode (RunLoops) each behaviour has its own pace, in Loops.
type PassTiming struct {
	// Passes is how many Steps finished.
	Passes int
	// Phase is the phase running now ("" between passes), since PhaseStart; PassStart is when the
	// running pass began (zero between passes).
	Phase                 string
	PhaseStart, PassStart time.Time
	// LastPass is how long the last finished pass took; LongestPhase and LongestPhaseTook name its
	// slowest phase.
	LastPass         time.Duration
	LongestPhase     string
	LongestPhaseTook time.Duration
	// Errors counts passes that ended with an error; LastError is the latest (phase: error).
	Errors    int
	LastError string
	// Loops is each behaviour's pace in loop mode, by phase name (nil otherwise).
	Loops map[string]LoopTiming
}

// LoopTiming is one behaviour's pace when it runs as its own loop.
type LoopTiming struct {
	// Runs is how many runs finished, Errors how many of them failed (LastError the latest).
	Runs, Errors int
	LastError    string
	// RunStart is when the running run began (zero between runs).
	RunStart time.Time
	// LastRun is how long the last finished run took, LongestRun the longest so far.
	LastRun, LongestRun time.Duration
}

// Timing returns the driver's pacing (safe to call while a pass runs).
func (d *Driver) Timing() PassTiming {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	t := d.timing
	t.Loops = maps.Clone(d.timing.Loops)
	return t
}

func (d *Driver) startPhase(name string, now time.Time) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	if d.timing.PassStart.IsZero() {
		d.timing.PassStart = now
		d.timing.LongestPhase, d.timing.LongestPhaseTook = "", 0
	}
	d.timing.Phase, d.timing.PhaseStart = name, now
}

func (d *Driver) endPhase(now time.Time, err error) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	if took := now.Sub(d.timing.PhaseStart); took >= d.timing.LongestPhaseTook {
		d.timing.LongestPhase, d.timing.LongestPhaseTook = d.timing.Phase, took
	}
	if err != nil {
		d.timing.LastError = d.timing.Phase + ": " + err.Error()
	}
}

func (d *Driver) endPass(now time.Time, failed bool) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	d.timing.Passes++
	d.timing.LastPass = now.Sub(d.timing.PassStart)
	d.timing.Phase, d.timing.PassStart = "", time.Time{}
	if failed {
		d.timing.Errors++
	}
}

func (d *Driver) startLoopRun(name string, now time.Time) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	if d.timing.Loops == nil {
		d.timing.Loops = map[string]LoopTiming{}
	}
	t := d.timing.Loops[name]
	t.RunStart = now
	d.timing.Loops[name] = t
}

func (d *Driver) endLoopRun(name string, now time.Time, err error) {
	d.timingMu.Lock()
	defer d.timingMu.Unlock()
	t := d.timing.Loops[name]
	t.Runs++
	t.LastRun = now.Sub(t.RunStart)
	t.LongestRun = max(t.LongestRun, t.LastRun)
	t.RunStart = time.Time{}
	if err != nil {
		t.Errors++
		t.LastError = err.Error()
	}
	d.timing.Loops[name] = t
}
