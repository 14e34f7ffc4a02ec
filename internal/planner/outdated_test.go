package planner

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"testing"
	"time"
)

func TestDecideImage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old, cur := Image{SHA256: "aaaa", CreatedTime: t0}, Image{SHA256: "bbbb", CreatedTime: t0.Add(time.Hour)}
	legacy := Image{SHA256: "aaaa"} // recorded before image versions were: bytes only
	base := ImageCheck{Enabled: true, Current: cur, Booted: old, State: VMAvailable}
	with := func(f func(*ImageCheck)) ImageCheck { c := base; f(&c); return c }
	tests := []struct {
		name        string
		in          ImageCheck
		wantReplace bool
		wantReason  string
	}{
		{"an available VM that booted an older image is replaced", base, true, afv1.ReasonOutdatedImage},
		{"a VM in flight that booted an older image is replaced", with(func(c *ImageCheck) { c.State = VMInFlight }), true, afv1.ReasonOutdatedImage},
		{"a VM booted before image versions were recorded is judged by its bytes", with(func(c *ImageCheck) { c.Booted = legacy }), true, afv1.ReasonOutdatedImage},
		{"the current image: nothing to do", with(func(c *ImageCheck) { c.Booted = cur }), false, afv1.ReasonCurrentImage},
		{"the same bytes under a newer createdTime are current", with(func(c *ImageCheck) { c.Booted = Image{SHA256: "bbbb", CreatedTime: t0} }), false, afv1.ReasonCurrentImage},
		{"a booted image newer than the pool's is never called outdated", with(func(c *ImageCheck) {
			c.Booted = Image{SHA256: "cccc", CreatedTime: t0.Add(2 * time.Hour)}
		}), false, afv1.ReasonCurrentImage},
		{"the cache has not caught up with the InfraEnv: nothing decided", with(func(c *ImageCheck) { c.Current = Image{} }), false, afv1.ReasonCurrentImageUnknown},
		{"no booted image recorded: nothing decided", with(func(c *ImageCheck) { c.Booted = Image{} }), false, afv1.ReasonCurrentImageUnknown},
		{"a bound or reserved VM is never touched", with(func(c *ImageCheck) { c.State = VMInUse }), false, afv1.ReasonOutdatedImageInUse},
		{"in use wins over the opt-out and a blocked pool", with(func(c *ImageCheck) { c.State, c.Enabled, c.CreateBlocked = VMInUse, false, true }), false, afv1.ReasonOutdatedImageInUse},
		{"a failed VM is left to the lifecycle", with(func(c *ImageCheck) { c.State = VMFailed }), false, afv1.ReasonOutdatedImageKept},
		{"a releasing VM is left to the lifecycle", with(func(c *ImageCheck) { c.State = VMReleasing }), false, afv1.ReasonOutdatedImageKept},
		{"a released VM (served a Machine before) is left to the lifecycle", with(func(c *ImageCheck) { c.State = VMReleased }), false, afv1.ReasonOutdatedImageKept},
		{"a VM holding a static-IP lease is kept (its config is in its image; leases regenerate images)", with(func(c *ImageCheck) { c.StaticIPLease = true }), false, afv1.ReasonOutdatedImageKept},
		{"opted out: kept", with(func(c *ImageCheck) { c.Enabled = false }), false, afv1.ReasonOutdatedImageKept},
		{"creation blocked: kept until a replacement can follow", with(func(c *ImageCheck) { c.CreateBlocked = true }), false, afv1.ReasonOutdatedImageKept},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := DecideImage(tt.in)
			if v.Replace != tt.wantReplace || v.Reason != tt.wantReason {
				t.Fatalf("DecideImage = %+v, want replace=%v reason %s", v, tt.wantReplace, tt.wantReason)
			}
			if v.Replace && v.Current {
				t.Fatalf("a replaced VM cannot be current: %+v", v)
			}
			if v.Message == "" {
				t.Fatalf("no message: %+v", v)
			}
		})
	}
}
