package planner

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"reflect"
	"testing"
)

// TestPlanStandby covers the warm standby's rules (spec.standby), one row per behaviour, in the notation
// of notation_test.go: the standby is filled at once and refilled as soon as the provider takes one of
// its Agents, it counts toward maxVMs, is never surplus while short, and leaves newest first.
func TestPlanStandby(t *testing.T) {
	tests := []struct{ name, snapshot, want string }{
		// Filling and refilling.
		{"no demand, no VMs: the standby is created", "standby=2", "create=2 standby=0/2"},
		{"standby full: nothing to do", "standby=2 vms=a,a", "standby=2/0"},
		{"a booting VM is supply, not yet a ready standby", "standby=2 vms=f,a?", "standby=0/0"},
		{"a standby Agent taken by the provider is replaced at once, without a burst window", "standby=2 vms=u,a debounce=1s/10s", "create=1 standby=1/1"},
		{"a burst: the standby refills at once, the demand waits for its window", "demand=1 standby=2 vms=u,u debounce=1s/10s",
			"deficit=1 create=2 requeue=1s burst=1/0s/0s standby=0/2"},
		{"the next pass: the refill pending, the demand's window closes", "demand=1 standby=2 vms=u,u pending=2 debounce=1s/10s burst=1/1s/1s",
			"create=1 burst=1/1s/1s closes standby=0/1"},
		{"demand about to take standby Agents: their replacements are due", "demand=2 standby=2 vms=a,a", "create=2 standby=0/2"},
		{"ready standby counts only Agents beyond what waiting demand takes", "demand=1 standby=2 vms=a,a,a", "standby=2/0"},
		{"foreign Agents serve demand, never our standby", "standby=1 foreign=2", "create=1 standby=0/1"},

		// Limits: the standby counts toward them.
		{"maxVMs caps the standby: limited", "standby=3 vms=u,u max=4", "create=2 wait=MaxVMsReached standby=0/3 limit=MaxVMsReached"},
		{"maxVMs reached: no standby, limited", "standby=2 vms=u,u,u,u max=4", "wait=MaxVMsReached standby=0/2 limit=MaxVMsReached"},
		{"maxVMs met by the standby itself: nothing more", "standby=2 vms=a,a max=2", "standby=2/0"},
		{"maxConcurrentProvisioning slows the fill, does not limit it", "standby=3 conc=1", "create=1 wait=MaxConcurrentProvisioningReached standby=0/3"},
		{"the failure domains take fewer: limited", "standby=2 domains=z1^1", "create=z1 wait=NoFailureDomainAvailable standby=0/2 limit=NoFailureDomainAvailable"},
		{"creation blocked: no refill, and why", "standby=1 noiso", "block=WaitingForISO refuse=WaitingForISO standby=0/1"},
		{"paused: no refill", "standby=2 paused", "wait=Paused noscan standby=0/2"},

		// Scale-down and reduction.
		{"scale-down while the standby is short: the in-flight VM is kept as standby", "standby=2 vms=f,a", "standby=1/0"},
		{"the same scale-down without standby releases it", "vms=f,a", "release=v1:Surplus,v2:Surplus"},
		{"standby reduced: the newest standby VMs leave", "standby=1 vms=a,a,a", "release=v3:Surplus,v2:Surplus standby=1/0"},
		{"standby reduced: VMs in use are never touched", "standby=1 vms=u,a,u,a", "release=v4:Surplus standby=1/0"},
		{"standby reduced: a VM whose Agent was just bound is never touched", "standby=1 vms=a,a&,a", "release=v3:Surplus standby=1/0"},
		{"standby reduced under Retain: kept, and why", "standby=1 vms=a,a retain", "wait=RetainPolicy standby=1/0"},
		{"a released VM leaves even while the standby is short (it never comes back as standby)", "standby=1 vms=d", "create=1 release=v1:Released standby=0/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshotOf(t, tt.snapshot)
			before := snapshotOf(t, tt.snapshot)
			d := Plan(s)
			if got := render(s, d); got != tt.want {
				t.Fatalf("Plan(%s)\n got: %s\nwant: %s\nactions: %+v", tt.snapshot, got, tt.want, d.Actions)
			}
			if !reflect.DeepEqual(s, before) {
				t.Fatalf("Plan modified its snapshot")
			}
			if d.Standby.Desired != s.Standby {
				t.Fatalf("standby desired %d, want spec's %d", d.Standby.Desired, s.Standby)
			}
		})
	}
}

// TestPlanStandbyCreateReason: VMs created for the standby alone say so; VMs for waiting demand keep
// the demand's reason.
func TestPlanStandbyCreateReason(t *testing.T) {
	for line, want := range map[string]string{"standby=1": afv1.ReasonStandbyFilling, "demand=1 standby=1": afv1.ReasonNoSuitableAgents} {
		d := Plan(snapshotOf(t, line))
		var got string
		for _, a := range d.Actions {
			if a.Kind == ActionCreate {
				got = a.Reason
			}
		}
		if got != want {
			t.Errorf("%s: create reason %q, want %q (actions %+v)", line, got, want, d.Actions)
		}
	}
}
