package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

const (
	maxVMRows   = 20
	eventRows   = 6
	plainPeriod = 3 * time.Second // non-TTY: at most one snapshot this often (and only when it changed)
)

// view draws the live table: redrawn in place on a terminal, appended as plain snapshots otherwise.
type view struct {
	out       io.Writer
	tty       bool
	width     int
	start     time.Time
	drawn     int // lines of the last in-place frame
	lastPlain string
	lastAt    time.Time
}

func newView(f *os.File) *view {
	v := &view{out: f, start: time.Now(), width: 120}
	if term.IsTerminal(int(f.Fd())) {
		v.tty = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 40 {
			v.width = w
		}
	}
	return v
}

// println prints a line of narrative above the live table (the table is redrawn below it).
func (v *view) println(format string, args ...any) {
	v.clear()
	v.write(format+"\n", args...)
}

// write prints to the terminal, the only place a failed write could be reported: its error is dropped.
func (v *view) write(format string, args ...any) {
	_, _ = fmt.Fprintf(v.out, format, args...)
}

// clear erases the last in-place frame so the next output starts where it began.
func (v *view) clear() {
	if v.tty && v.drawn > 0 {
		v.write("\x1b[%dA\r\x1b[J", v.drawn) // cursor up N lines, column 0, erase below
		v.drawn = 0
	}
}

// render draws one frame for a snapshot; stage names what the scenario waits for.
func (v *view) render(stage string, s *harness.Snapshot, t *harness.Tracker) {
	body := frame(s, t, v.width)
	if v.tty {
		v.clear()
		lines := append([]string{fmt.Sprintf("── t+%3.0fs  %s", time.Since(v.start).Seconds(), stage)}, body...)
		for _, l := range lines {
			v.write("%s\n", fit(l, v.width-1))
		}
		v.drawn = len(lines)
		return
	}
	text := strings.Join(body, "\n")
	if text == v.lastPlain || time.Since(v.lastAt) < plainPeriod {
		return
	}
	v.lastPlain, v.lastAt = text, time.Now()
	v.write("── t+%.0fs  %s\n%s\n", time.Since(v.start).Seconds(), stage, text)
}

func frame(s *harness.Snapshot, t *harness.Tracker, width int) []string {
	p := s.Pool
	ready := "?"
	for _, c := range p.Status.Conditions {
		if c.Type == afv1.ConditionReady {
			ready = string(c.Status) + "/" + c.Reason
		}
	}
	standby := ""
	if p.Status.Standby != nil {
		standby = fmt.Sprintf("   standby %d/%d", p.Status.Standby.Ready, p.Status.Standby.Desired)
	}
	lines := []string{
		fmt.Sprintf("pool %s/%s   waiting %d   desired %d   agents %d   VMs %d%s   ready %s",
			p.Namespace, p.Name, p.Status.WaitingAgentMachines, p.Status.DesiredReplicas, p.Status.MatchingAgents, p.Status.VMs, standby, ready),
		fmt.Sprintf("simulator: %d VMs with the pool's marker   machines %d (%d waiting)   agents bound %d   (run totals: %d VMs created, %d ISOs ejected)",
			len(s.VMs), s.LiveMachines(), s.WaitingMachines(), s.BoundAgents(), t.Created(), t.Ejected()),
		fmt.Sprintf("  %-22s %-13s %-10s %-24s %s", "VM", "PHASE", "AGENT", "MACHINE", "ISO"),
	}
	for i := range s.VAs {
		if i == maxVMRows {
			lines = append(lines, fmt.Sprintf("  … and %d more", len(s.VAs)-maxVMRows))
			break
		}
		va := &s.VAs[i]
		name := va.Status.VM.Name
		if name == "" {
			name = va.Name
		}
		phase := string(va.Status.VM.Phase)
		if phase == "" {
			phase = "-"
		}
		lines = append(lines, fmt.Sprintf("  %-22s %-13s %-10s %-24s %s", name, phase, short(va.Status.VM.AgentName, 8),
			dash(va.Status.VM.MachineName), isoState(s, va)))
	}
	lines = append(lines, "operator events (newest last):")
	evs := s.Events
	if len(evs) > eventRows {
		evs = evs[len(evs)-eventRows:]
	}
	for i := range evs {
		e := &evs[i]
		lines = append(lines, fmt.Sprintf("  %s %-7s %-16s %s: %s", harness.EventTime(e).Local().Format("15:04:05"), e.Type, e.Reason,
			e.InvolvedObject.Name, strings.ReplaceAll(e.Message, "\n", " ")))
	}
	for i := range lines {
		lines[i] = fit(lines[i], width-1)
	}
	return lines
}

// isoState is the simulator's truth (CD-ROM connected or not) plus the operator's ISOEjected reason.
func isoState(s *harness.Snapshot, va *afv1.VsphereAgent) string {
	vm := s.VMByInstanceUUID(string(va.UID))
	state := "-"
	if vm != nil {
		state = "ejected"
		if harness.ISOAttached(vm) {
			state = "attached"
		}
	}
	if r := harness.EjectionReason(va); r != "" {
		state += " (" + r + ")"
	}
	return state
}

func short(s string, n int) string {
	if s == "" {
		return "-"
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fit(s string, width int) string {
	r := []rune(s)
	if width > 1 && len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}
