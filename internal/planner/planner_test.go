package planner

import (
	"reflect"
	"testing"
)

// TestPlan covers every rule of Plan, one row per behaviour, in the notation of notation_test.go.
func TestPlan(t *testing.T) {
	tests := []struct{ name, snapshot, want string }{
		// Supply and demand.
		{"no demand, no VMs: nothing to do", "", ""},
		{"demand with nothing else: create that many", "demand=5", "deficit=5 create=5"},
		{"VMs in flight count as supply", "demand=5 vms=f,f,f", "deficit=2 create=2"},
		{"a VM not created yet is in flight too", "demand=2 vms=n", "deficit=1 create=1"},
		{"pending creates count as supply (a burst never double-creates)", "demand=5 pending=5", ""},
		{"foreign free Agents count as supply", "demand=3 foreign=2", "deficit=1 create=1"},
		{"bound VMs are not supply", "demand=2 vms=u,u", "deficit=2 create=2"},
		{"failed VMs are not supply", "demand=2 vms=x,x", "deficit=2 create=2"},
		{"releasing VMs are not supply", "demand=1 vms=r", "deficit=1 create=1"},
		{"a VM whose Agent is already bound is in use, never surplus", "vms=a&", ""},

		// Limits.
		{"maxVMs caps creation", "demand=5 vms=u,u max=4", "deficit=5 create=2 wait=MaxVMsReached"},
		{"maxVMs reached: create nothing", "demand=5 vms=u,u,u,u max=4", "deficit=5 wait=MaxVMsReached"},
		{"a released VM counts against maxVMs until destroyed", "demand=2 vms=d max=2", "deficit=2 create=1 release=v1:Released wait=MaxVMsReached"},
		{"a releasing VM (its destroy held) counts against maxVMs until destroyed", "demand=3 vms=u,r,r max=3", "deficit=3 wait=MaxVMsReached"},
		{"a releasing VM leaves room only for what maxVMs has left", "demand=3 vms=r max=3", "deficit=3 create=2 wait=MaxVMsReached"},
		{"a failed VM whose VM was destroyed no longer counts against maxVMs", "demand=2 vms=x,x max=2", "deficit=2 create=2"},
		{"maxConcurrentProvisioning caps creation", "demand=5 vms=f conc=3", "deficit=4 create=2 wait=MaxConcurrentProvisioningReached"},
		{"pending creates count as in flight", "demand=5 pending=2 conc=3", "deficit=3 create=1 wait=MaxConcurrentProvisioningReached"},

		// Pause.
		{"paused: nothing is created", "demand=5 paused", "deficit=5 wait=Paused noscan"},
		{"paused: surplus and released VMs stay", "vms=a,a,d paused", "wait=Paused noscan"},

		// Release.
		{"surplus released under Delete, newest first", "vms=u,u,a,a,a", "release=v5:Surplus,v4:Surplus,v3:Surplus"},
		{"surplus kept under Retain", "vms=a,a retain", "wait=RetainPolicy"},
		{"in-use VMs are never surplus", "vms=u,u,u", ""},
		{"in-flight surplus goes before registered", "demand=1 vms=a,f", "release=v2:Surplus"},
		{"demand met exactly: nothing", "demand=2 vms=a,f", ""},
		{"released VMs removed under Delete even with demand", "demand=1 vms=d", "deficit=1 create=1 release=v1:Released"},
		{"released VMs kept under Retain", "vms=d retain", ""},
		{"foreign Agents cover demand first: ours are surplus", "demand=1 foreign=1 vms=a", "release=v1:Surplus"},

		// Failure domains.
		{"surplus from the most populated domain first, ties by domain name", "vms=a@z1,a@z2,a@z2,a@z2,a@z3 domains=z1,z2,z3",
			"release=v4:Surplus,v3:Surplus,v1:Surplus,v2:Surplus,v5:Surplus"},
		{"VMs in use count towards a domain's population but are never released", "vms=u@z1,u@z1,a@z1,a@z2 domains=z1,z2", "release=v3:Surplus,v4:Surplus"},
		{"demand keeps one: the most populated domain gives", "demand=2 vms=a@z1,a@z2,a@z2 domains=z1,z2", "release=v3:Surplus"},
		{"new VMs spread over the domains, fewest VMs first", "demand=4 vms=u@z1 domains=z1,z2,z3", "deficit=4 create=z2,z3,z1,z2"},
		{"a domain at maxVMs or out of headroom takes none: fewer VMs, and why", "demand=3 domains=z1<1,z2-", "deficit=3 create=z1 wait=NoFailureDomainAvailable"},
		{"headroom caps a domain", "demand=3 domains=z1^1,z2<1", "deficit=3 create=z1,z2 wait=NoFailureDomainAvailable"},
		{"a domain skipped for failing creations takes none", "demand=2 domains=z1!,z2", "deficit=2 create=z2,z2"},
		{"a VM not created yet in a removed domain is released; its demand goes elsewhere", "demand=1 vms=n@z9 domains=z1",
			"deficit=1 create=z1 release=v1:FailureDomainNotFound"},
		{"a VM not created yet in a domain of a pool that lost all its domains is released", "demand=1 vms=n@z1", "deficit=1 create=1 release=v1:FailureDomainNotFound"},
		{"a created VM in a removed domain stays", "demand=1 vms=a@z9 domains=z1", ""},
		{"a VM whose creation failed in a domain skipped for failing creations is released", "demand=1 vms=n!@z1 domains=z1!,z2",
			"deficit=1 create=z2 release=v1:CreationsFailing"},
		{"a VM not created yet in a failing domain waits if its own creation did not fail", "demand=1 vms=n@z1 domains=z1!,z2", ""},
		{"paused: an abandoned VM is not supply and not released either", "demand=1 vms=n@z9 domains=z1 paused", "deficit=1 wait=Paused noscan"},

		// What stops creation, in priority order.
		{"three failed registrations since the last one open the breaker", "demand=1 vms=x,x,x", "deficit=1 block=RegistrationFailing refuse=RegistrationFailing"},
		{"a registration after the failures closes the breaker", "demand=1 vms=x,x,x,u+10s", "deficit=1 create=1"},
		{"failures before the last registration do not count", "demand=1 vms=x+30m,x+30m,x+30m,u+10m", "deficit=1 create=1"},
		{"the breaker comes first", "demand=1 vms=x,x,x preflight=InvalidPlacement staticip=IPAMUnavailable nosession noiso",
			"deficit=1 block=RegistrationFailing refuse=RegistrationFailing"},
		{"then a failed preflight check", "demand=1 preflight=InvalidPlacement hardware staticip=IPAMUnavailable nosession noiso",
			"deficit=1 block=InvalidPlacement refuse=InvalidPlacement"},
		{"then a template shape a host failed the hardware validations of", "demand=1 hardware staticip=IPAMUnavailable nosession noiso",
			"deficit=1 block=HostValidationFailing refuse=HostValidationFailing"},
		{"then static addressing", "demand=1 staticip=IPAMUnavailable nosession noiso", "deficit=1 block=IPAMUnavailable refuse=IPAMUnavailable"},
		{"then the vCenter session", "demand=1 nosession noiso", "deficit=1 block=WaitingForVSphere refuse=WaitingForVSphere"},
		{"then the ISO", "demand=1 noiso", "deficit=1 block=WaitingForISO refuse=WaitingForISO"},
		{"a block stops creation, not removal", "vms=a,d noiso", "release=v2:Released,v1:Surplus block=WaitingForISO"},

		// Outdated images.
		{"an available VM on an outdated image is replaced: demand creates its successor", "demand=1 vms=a~", "deficit=1 create=1 release=v1:OutdatedImage"},
		{"an outdated VM in flight is replaced too", "demand=1 vms=f~", "deficit=1 create=1 release=v1:OutdatedImage"},
		{"an outdated VM without demand is released all the same", "vms=a~", "release=v1:OutdatedImage"},
		{"an outdated VM in use is never touched", "vms=u~", ""},
		{"an outdated VM holding a static-IP lease is kept", "demand=1 vms=a~#", ""},
		{"outdated VMs kept when replaceOutdatedVMs is false", "demand=1 vms=a~ noreplace", ""},
		{"nothing is outdated while the current image is not known", "demand=1 vms=a~ image=unknown", ""},
		{"outdated VMs kept while creation is blocked", "demand=1 vms=a~ noiso", "block=WaitingForISO"},
		{"an available VM of an earlier template is replaced: demand creates its successor", "demand=1 vms=a%", "deficit=1 create=1 release=v1:OutdatedTemplate"},
		{"a VM of an earlier template in flight is replaced too", "demand=1 vms=f%", "deficit=1 create=1 release=v1:OutdatedTemplate"},
		{"a standby VM of an earlier template is replaced by a standby VM of the current one", "standby=1 vms=a%", "create=1 release=v1:OutdatedTemplate standby=0/1"},
		{"a bound worker of an earlier template is reported, never touched", "vms=u%,u,u%", "drift=v1,v3"},
		{"a bound worker whose template is not recorded is counted apart", "vms=u=,u", "unrecorded=1"},
		{"an earlier template and an outdated image: replaced once, for the image", "demand=1 vms=a~%", "deficit=1 create=1 release=v1:OutdatedImage"},
		{"an earlier template whatever replaceOutdatedVMs says (that knob is about images)", "demand=1 vms=a% noreplace", "deficit=1 create=1 release=v1:OutdatedTemplate"},
		{"VMs of an earlier template kept while creation is blocked", "demand=1 vms=a% noiso", "block=WaitingForISO"},
		{"VMs of an earlier template kept while paused (still supply)", "demand=1 vms=a% paused", "wait=Paused noscan"},
		{"a failed VM of an earlier template is left to its lifecycle", "vms=x%", ""},
		{"outdated VMs kept while paused", "demand=1 vms=a~ paused", "wait=Paused noscan"},
		{"replacements are released last", "vms=d,a~,a", "release=v1:Released,v3:Surplus,v2:OutdatedImage"},

		// Expiry.
		{"a failed VM past FailedRetention expires", "vms=x+2h", "expire=v1"},
		{"a failed VM within FailedRetention stays", "vms=x+30m", ""},
		{"paused: nothing expires", "vms=x+2h paused", "wait=Paused noscan"},

		// Bursts of demand.
		{"first sight of demand waits the idle gap", "demand=3 debounce=1s/10s", "deficit=3 requeue=1s burst=3/0s/0s"},
		{"demand stable for the idle gap: create, closing the burst", "demand=3 debounce=1s/10s burst=3/1s/1s", "deficit=3 create=3 burst=3/1s/1s closes"},
		{"demand changed: wait the idle gap again", "demand=4 debounce=1s/10s burst=3/2s/2s", "deficit=4 requeue=1s burst=4/2s/0s"},
		{"a burst never waits past the maximum", "demand=5 debounce=1s/10s burst=4/9500ms/100ms", "deficit=5 requeue=500ms burst=5/9.5s/0s"},
		{"no creation needed: the burst is forgotten", "debounce=1s/10s burst=3/2s/2s", ""},
		{"creation blocked: the burst is forgotten", "demand=3 noiso debounce=1s/10s burst=3/2s/2s", "deficit=3 block=WaitingForISO refuse=WaitingForISO"},
		{"paused: the burst stays as it was", "demand=3 paused debounce=1s/10s burst=3/2s/2s", "deficit=3 wait=Paused burst=3/2s/2s noscan"},
		{"the domains take none: the burst closes all the same", "demand=1 domains=z1- debounce=1s/10s burst=1/2s/2s",
			"deficit=1 wait=NoFailureDomainAvailable burst=1/2s/2s closes"},
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
			for _, r := range d.Releases {
				if r.Message == "" {
					t.Errorf("release %s (%s) does not say why", r.Name, r.Reason)
				}
			}
		})
	}
}
