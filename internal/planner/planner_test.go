package planner

import (
	"reflect"
	"testing"
	"time"
)

func i32(v int32) *int32 { return &v }

func vms(spec string) []VMState {
	// One letter per VM: f=in flight, a=available, u=in use, x=failed, r=releasing, d=released.
	states := map[rune]VMLifecycle{'f': VMInFlight, 'a': VMAvailable, 'u': VMInUse, 'x': VMFailed, 'r': VMReleasing, 'd': VMReleased}
	var out []VMState
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, c := range spec {
		out = append(out, VMState{Name: string(rune('a'+i)) + "-vm", State: states[c], CreatedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	return out
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name        string
		in          Input
		wantCreate  int
		wantRelease []string
		wantReason  string
	}{
		{name: "no demand, no VMs: nothing to do", in: Input{RemoveSurplus: true}},
		{name: "five waiting, nothing else: create five", in: Input{Waiting: 5}, wantCreate: 5, wantReason: ReasonDemand},
		{name: "VMs in flight count as supply", in: Input{Waiting: 5, VMs: vms("fff")}, wantCreate: 2},
		{name: "pending creates count as supply (burst never double-creates)", in: Input{Waiting: 5, PendingCreates: 5}},
		{name: "foreign free Agents count as supply", in: Input{Waiting: 3, ForeignAvailable: 2}, wantCreate: 1},
		{name: "bound VMs are not supply", in: Input{Waiting: 2, VMs: vms("uu")}, wantCreate: 2},
		{name: "failed VMs are not supply", in: Input{Waiting: 2, VMs: vms("xx")}, wantCreate: 2},
		{name: "releasing VMs are ignored", in: Input{Waiting: 1, VMs: vms("r")}, wantCreate: 1},
		{name: "maxVMs caps creation", in: Input{Waiting: 5, VMs: vms("uu"), MaxVMs: i32(4)}, wantCreate: 2, wantReason: ReasonMaxVMs},
		{name: "maxVMs reached: create nothing", in: Input{Waiting: 5, VMs: vms("uuuu"), MaxVMs: i32(4)}, wantReason: ReasonMaxVMs},
		{name: "maxConcurrentProvisioning caps creation", in: Input{Waiting: 5, VMs: vms("f"), MaxConcurrentProvisioning: i32(3)}, wantCreate: 2, wantReason: ReasonMaxConcurrent},
		{name: "paused: nothing, not even surplus removal", in: Input{Waiting: 5, Paused: true}, wantReason: ReasonPaused},
		{name: "paused with surplus keeps VMs", in: Input{VMs: vms("aa"), Paused: true, RemoveSurplus: true}, wantReason: ReasonPaused},
		{name: "creation blocked says why", in: Input{Waiting: 2, CreateBlocked: true, BlockReason: "RegistrationFailing"}, wantReason: "RegistrationFailing"},
		{name: "surplus available VMs released under Delete", in: Input{VMs: vms("uuaaa"), RemoveSurplus: true}, wantRelease: []string{"e-vm", "d-vm", "c-vm"}, wantReason: ReasonSurplus},
		{name: "surplus kept under Retain", in: Input{VMs: vms("aa")}, wantReason: ReasonRetainPolicy},
		{name: "in-use VMs are never surplus", in: Input{VMs: vms("uuu"), RemoveSurplus: true}},
		{name: "in-flight surplus released before registered", in: Input{Waiting: 1, VMs: vms("af"), RemoveSurplus: true}, wantRelease: []string{"b-vm"}},
		{name: "demand met exactly: nothing", in: Input{Waiting: 2, VMs: vms("af"), RemoveSurplus: true}},
		{name: "released VMs removed under Delete even with demand", in: Input{Waiting: 1, VMs: vms("d"), RemoveSurplus: true}, wantCreate: 1, wantRelease: []string{"a-vm"}, wantReason: ReasonReleased},
		{name: "released VMs kept under Retain", in: Input{VMs: vms("d")}},
		{name: "foreign Agents cover demand: ours are surplus", in: Input{Waiting: 1, ForeignAvailable: 1, VMs: vms("a"), RemoveSurplus: true}, wantRelease: []string{"a-vm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Compute(tt.in)
			if p.Create != tt.wantCreate {
				t.Errorf("Create = %d, want %d (actions %+v)", p.Create, tt.wantCreate, p.Actions)
			}
			if !reflect.DeepEqual(p.Release, tt.wantRelease) && !(len(p.Release) == 0 && len(tt.wantRelease) == 0) {
				t.Errorf("Release = %v, want %v", p.Release, tt.wantRelease)
			}
			if tt.wantReason != "" {
				found := false
				for _, a := range p.Actions {
					if a.Reason == tt.wantReason {
						found = true
					}
				}
				if !found {
					t.Errorf("no action with reason %q in %+v", tt.wantReason, p.Actions)
				}
			}
			if p.Create < 0 {
				t.Errorf("negative create")
			}
		})
	}
}

// The fuzz target (FuzzPlan, stronger than the former FuzzCompute) is in planner_fuzz_test.go.
