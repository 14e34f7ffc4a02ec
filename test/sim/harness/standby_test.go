package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
)

// plateau builds snapshots the way Observe reads them: VMs, their VsphereAgents (UID = instance UUID),
// their Agents (named from the BIOS UUID, as assisted-service does in the world) and the Machines.
type plateau struct{ s *Snapshot }

func newPlateau() *plateau { return &plateau{s: &Snapshot{Pool: &afv1.VsphereAgentPool{}}} }

// vm adds VM i; withVA adds its VsphereAgent, agent its Agent (bound to am when am != "", selectable
// when ready). It returns the Agent's name.
func (p *plateau) vm(i int, withVA, agent bool, am string, ready bool) string {
	inst, bios := fmt.Sprintf("10000000-0000-0000-0000-%012d", i), fmt.Sprintf("20000000-0000-0000-0000-%012d", i)
	p.s.VMs = append(p.s.VMs, vsphere.VMInfo{Name: fmt.Sprintf("vm-%d", i), InstanceUUID: inst, BIOSUUID: bios})
	if withVA {
		va := afv1.VsphereAgent{}
		va.Name, va.UID = fmt.Sprintf("va-%d", i), types.UID(inst)
		p.s.VAs = append(p.s.VAs, va)
	}
	name := world.AgentNameFor(bios)
	if agent {
		p.s.Agents = append(p.s.Agents, AgentView{Name: name, AgentMachine: am, Selectable: ready})
	}
	return name
}

// worker adds VM i bound to the AgentMachine of Machine m-i, and that Machine.
func (p *plateau) worker(i int) *plateau {
	m := fmt.Sprintf("m-%d", i)
	agent := p.vm(i, true, true, m, true)
	p.s.Machines = append(p.s.Machines, world.MachineView{Name: m, Phase: "Running", Agent: "clusters/" + agent})
	return p
}

// standby adds VM i as a ready standby VM (VsphereAgent, selectable unbound Agent).
func (p *plateau) standby(i int) *plateau {
	p.vm(i, true, true, "", true)
	return p
}

func workers(n int) *plateau {
	p := newPlateau()
	for i := range n {
		p.worker(i)
	}
	return p
}

func TestPlateauViolationsAllowExactlyTheStandby(t *testing.T) {
	cases := []struct {
		name     string
		p        *plateau
		standby  int
		want     []string // one substring per expected violation, in order
		scaledUp bool
	}{
		{name: "no standby: one VM per Machine", p: workers(3), scaledUp: true},
		{name: "standby 2: two ready VMs beyond the Machines", p: workers(3).standby(3).standby(4), standby: 2, scaledUp: true},
		{name: "standby 0: a ready VM beyond the Machines is one too many", p: workers(3).standby(3),
			want: []string{"1 VMs back no Machine (vm-3) but the standby allows 0"}},
		{name: "standby 2: a second VM for one Machine, its Agent bound to the same AgentMachine",
			p: func() *plateau {
				p := workers(3).standby(3).standby(4)
				p.vm(5, true, true, "m-0", true)
				return p
			}(), standby: 2,
			want: []string{"AgentMachine m-0 is served by 2 Agents"}},
		{name: "standby 2: a second VM for one Machine that never registered",
			p: func() *plateau {
				p := workers(3).standby(3).standby(4)
				p.vm(5, true, false, "", false)
				return p
			}(), standby: 2,
			want: []string{"3 VMs back no Machine (vm-3, vm-4, vm-5) but the standby allows 2"}},
		{name: "standby 2: three ready VMs beyond the Machines", p: workers(3).standby(3).standby(4).standby(5), standby: 2,
			want: []string{"3 VMs back no Machine (vm-3, vm-4, vm-5) but the standby allows 2"}},
		{name: "standby 1: a standby VM bound twice (its Agent reserved by two Machines)",
			p: func() *plateau {
				p := workers(3).standby(4)
				agent := p.vm(3, true, true, "m-3", true)
				p.s.Machines = append(p.s.Machines, world.MachineView{Name: "m-3", Agent: "clusters/" + agent}, world.MachineView{Name: "m-4", Agent: "clusters/" + agent})
				return p
			}(), standby: 1,
			want: []string{"VM vm-3: its Agent " + world.AgentNameFor("20000000-0000-0000-0000-000000000003") + " is reserved by 2 Machines (m-3, m-4): one VM bound twice"}},
		{name: "standby 2: an extra VM whose Agent is not validated yet",
			p: func() *plateau {
				p := workers(3).standby(3)
				p.vm(4, true, true, "", false)
				return p
			}(), standby: 2,
			want: []string{"VM vm-4 backs no Machine and is not a ready standby: its Agent is not approved, Validated, Connected and Bound=False"}},
		{name: "standby 2: an extra VM no VsphereAgent owns",
			p: func() *plateau {
				p := workers(3).standby(3)
				p.vm(4, false, true, "", true)
				return p
			}(), standby: 2,
			want: []string{"VM vm-4 backs no Machine and is not a ready standby: no VsphereAgent owns it"}},
		{name: "standby 2: one ready VM only", p: workers(3).standby(3), standby: 2,
			want: []string{"standby short: 1 of 2 VMs back no Machine"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.s.PlateauViolations(tc.standby)
			if len(got) != len(tc.want) {
				t.Fatalf("violations %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i], tc.want[i])
				}
			}
			if up := tc.p.s.ScaledUpWithStandby(3, tc.standby); up != tc.scaledUp {
				t.Errorf("ScaledUpWithStandby(3, %d) = %t, want %t (%s)", tc.standby, up, tc.scaledUp, tc.p.s.Describe())
			}
		})
	}
}

func TestScaledDownWithStandbyWaitsForTheDeletedMachines(t *testing.T) {
	p := workers(2).standby(2).standby(3)
	if !p.s.ScaledDownWithStandby(2, 2) {
		t.Fatalf("2 workers and 2 ready standby VMs: not scaled down to 2 with standby 2 (%s)", p.s.Describe())
	}
	if p.s.ScaledDownWithStandby(2, 0) || p.s.ScaledDownWithStandby(4, 0) {
		t.Error("2 workers and 2 standby VMs count as scaled down without standby")
	}
	p.s.Machines = append(p.s.Machines, world.MachineView{Name: "m-9", Deleting: true})
	if p.s.ScaledDownWithStandby(2, 2) {
		t.Error("a Machine still being deleted counts as scaled down")
	}
	if got := p.s.StandbyAgents(); len(got) != 2 {
		t.Errorf("StandbyAgents = %v, want the 2 unbound Agents", got)
	}
}

func TestTrackerFlagsAnAgentBoundToASecondAgentMachine(t *testing.T) {
	tr := NewTracker()
	p := workers(1).standby(1)
	tr.Observe(p.s)
	if got := tr.Rebound(); len(got) != 0 {
		t.Fatalf("Rebound after one binding = %q", got)
	}
	// The standby's Agent is bound to m-1 (a binding from standby, fine), then m-0's Agent moves to m-2.
	next := workers(1).standby(1)
	next.s.Agents[1].AgentMachine = "m-1"
	tr.Observe(next.s)
	if got := tr.Rebound(); len(got) != 0 {
		t.Fatalf("a standby Agent's first binding counted as a rebinding: %q", got)
	}
	last := workers(1).standby(1)
	last.s.Agents[0].AgentMachine = "m-2"
	last.s.Agents[1].AgentMachine = "m-1"
	tr.Observe(last.s)
	tr.Observe(last.s)
	got := tr.Rebound()
	if len(got) != 1 || !strings.Contains(got[0], "bound to AgentMachine m-0, later to m-2") {
		t.Fatalf("Rebound = %q, want the one Agent moved from m-0 to m-2, once", got)
	}
}

func TestSummaryAddsTheStandbyFigures(t *testing.T) {
	tr := NewTracker()
	tr.SetISOTransport("ISO over HTTPS (private CA via injected bundle)")
	tr.SetStandby(StandbyFigures{})
	if s := tr.Summary("demo"); strings.Contains(s, "standby") {
		t.Errorf("standby 0 shows in the summary: %q", s)
	}
	tr.SetStandby(StandbyFigures{Desired: 2, ReadyBefore: 2, BoundFromStandby: 2, BoundIn: 420 * time.Millisecond,
		RefilledIn: 6080 * time.Millisecond, KeptAtScaleDown: 2})
	want := "0 VMs cleaned up, standby 2: 2 ready before the scale-up, 2 bound from standby in 0.4 s, refilled to 2 in 6.1 s, 2 kept at scale-down, ISO over HTTPS (private CA via injected bundle), 0 invariant violations"
	if s := tr.Summary("demo"); !strings.HasSuffix(s, want) {
		t.Errorf("summary %q, want suffix %q", s, want)
	}
	tr.SetStandby(StandbyFigures{Desired: 2, ReadyBefore: 2, BoundFromStandby: 1, BoundIn: time.Second})
	if s := tr.Summary("demo"); !strings.Contains(s, "1 bound from standby in 1.0 s, not refilled, 0 kept at scale-down") {
		t.Errorf("a standby that was not refilled: summary %q", s)
	}
}
