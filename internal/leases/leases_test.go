package leases

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
)

func TestNewMACStaysInVMwareStaticRangeAndAvoidsUsed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	used := sets.New[string]()
	for range 2000 {
		mac, err := NewMAC(rng, used)
		if err != nil {
			t.Fatal(err)
		}
		if !IsStaticMAC(mac) {
			t.Fatalf("%s is outside 00:50:56:00:00:00-00:50:56:3f:ff:ff", mac)
		}
		if used.Has(mac) {
			t.Fatalf("%s handed out twice", mac)
		}
		used.Insert(mac)
	}
}

func TestIsStaticMAC(t *testing.T) {
	for mac, want := range map[string]bool{
		"00:50:56:00:00:00": true, "00:50:56:3f:ff:ff": true, "00:50:56:3F:FF:FF": true,
		"00:50:56:40:00:00": false, "00:0c:29:00:00:01": false, "00:50:56:00:00": false, "": false,
	} {
		if got := IsStaticMAC(mac); got != want {
			t.Errorf("IsStaticMAC(%q) = %t, want %t", mac, got, want)
		}
	}
}

func TestImageCarries(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 10, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		image, config time.Time
		want          bool
	}{
		{"image a second after the config carries it", base.Add(time.Second), base, true},
		{"image in the config's second proves nothing", base.Add(900 * time.Millisecond), base.Add(100 * time.Millisecond), false},
		{"image before the config lacks it", base, base.Add(2 * time.Second), false},
		{"no image yet", time.Time{}, base, false},
		{"no config yet", base, time.Time{}, false},
	} {
		if got := ImageCarries(tc.image, tc.config); got != tc.want {
			t.Errorf("%s: got %t", tc.name, got)
		}
	}
}

func TestDecide(t *testing.T) {
	ready := Lease{Name: "r", AddressName: "r", HasConfig: true, Selected: true}
	invalid := Lease{Name: "i", AddressName: "i", Invalid: "gateway 10.0.1.1 is not inside 10.0.0.21/24"}
	held := Lease{Name: "h", AddressName: "h", HasConfig: true, Holder: "vm1"}
	released := Lease{Name: "x", AddressName: "x", HasConfig: true, Holder: "vm2", Disposition: StateReleased}
	retained := Lease{Name: "k", AddressName: "k", HasConfig: true, Holder: "vm3", Disposition: StateRetained}
	exhausted := Lease{Name: "e", Exhausted: "pool vm-net has no free addresses"}
	for _, tc := range []struct {
		name                string
		leases              []Lease
		live, newVMs, spare int
		create              int
		release             []string
	}{
		{"spares prepared ahead of demand", nil, 0, 0, 3, 3, nil},
		{"a burst claims for every new VM plus spares at once", []Lease{ready, ready, ready}, 0, 10, 3, 10, nil},
		{"held and ready leases count", []Lease{held, ready}, 1, 0, 1, 0, nil},
		{"released leases are removed together and replaced", []Lease{held, released, released}, 1, 0, 1, 1, []string{"x", "x"}},
		{"retained leases stay and do not count", []Lease{retained}, 0, 0, 1, 1, nil},
		{"an exhausted pool gets no further claims", []Lease{exhausted}, 2, 0, 1, 0, nil},
		{"surplus spares are not Decide's (see Surplus)", []Lease{ready, ready, ready}, 0, 0, 1, 0, nil},
		{"an invalid address counts: no claim churn against a misconfigured IPAM pool", []Lease{invalid, ready}, 0, 0, 2, 0, nil},
	} {
		p := Decide(tc.leases, tc.live, tc.newVMs, tc.spare)
		if p.Create != tc.create || len(p.Release) != len(tc.release) {
			t.Errorf("%s: got create %d release %v, want %d %v", tc.name, p.Create, p.Release, tc.create, tc.release)
		}
	}
}

func TestReleaseDue(t *testing.T) {
	now := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) Lease { return Lease{Disposition: StateReleased, ReleasedAt: now.Add(-ago)} }
	for _, tc := range []struct {
		name     string
		released []Lease
		deleting bool
		want     bool
	}{
		{"nothing released", nil, false, false},
		{"quiet since the last release and no deletion in flight: now", []Lease{at(20 * time.Second), at(11 * time.Second)}, false, true},
		{"a release moments ago: the scale-down may not be over", []Lease{at(20 * time.Second), at(2 * time.Second)}, false, false},
		{"a scale-down still destroying VMs: wait for the batch", []Lease{at(20 * time.Second)}, true, false},
		{"never longer than the window", []Lease{at(time.Second), at(61 * time.Second)}, true, true},
		{"released before the annotation existed: now", []Lease{{Disposition: StateReleased}}, false, true},
	} {
		if got := ReleaseDue(tc.released, tc.deleting, now, 10*time.Second, time.Minute); got != tc.want {
			t.Errorf("%s: got %t", tc.name, got)
		}
	}
}

func TestStateOfNeedsTheInfraEnvToSelectTheConfig(t *testing.T) {
	l := Lease{Name: "r", AddressName: "r", HasConfig: true}
	if got := l.StateOf(); got != StatePending {
		t.Errorf("a config the InfraEnv does not select: %s, want Pending", got)
	}
	l.Selected = true
	if got := l.StateOf(); got != StateReady {
		t.Errorf("a selected config: %s, want Ready", got)
	}
	l.Invalid = "x"
	if got := l.StateOf(); got != StateInvalid {
		t.Errorf("an invalid address: %s, want Invalid", got)
	}
}

func TestSelects(t *testing.T) {
	sel := map[string]string{"a": "1", "b": "2"}
	for _, tc := range []struct {
		name   string
		sel    map[string]string
		labels map[string]string
		want   bool
	}{
		{"every selector label present", sel, map[string]string{"a": "1", "b": "2", "c": "3"}, true},
		{"a value differs", sel, map[string]string{"a": "1", "b": "3"}, false},
		{"a key missing", sel, map[string]string{"a": "1"}, false},
		{"empty selector selects nothing", nil, map[string]string{"a": "1"}, false},
	} {
		if got := Selects(tc.sel, tc.labels); got != tc.want {
			t.Errorf("%s: got %t", tc.name, got)
		}
	}
}

// Surplus gives back spares beyond the target only once demand has settled, cheapest first.
func TestSurplus(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-time.Minute), now.Add(-time.Second)
	ready := func(name string, claimed time.Time) Lease {
		return Lease{Name: name, AddressName: name, HasConfig: true, Selected: true, Claimed: claimed}
	}
	pending := Lease{Name: "p", Claimed: old}
	held := Lease{Name: "h", AddressName: "h", HasConfig: true, Holder: "vm1", Claimed: old}
	invalid := Lease{Name: "i", AddressName: "i", Invalid: "bad gateway", Claimed: old}
	released := Lease{Name: "x", AddressName: "x", HasConfig: true, Holder: "vm2", Disposition: StateReleased, Claimed: old}
	for _, tc := range []struct {
		name                string
		leases              []Lease
		live, newVMs, spare int
		want                []string
	}{
		{"at the target: nothing", []Lease{held, ready("r1", old)}, 1, 0, 1, nil},
		{"one spare beyond the target goes", []Lease{held, ready("r1", old), ready("r2", old)}, 1, 0, 1, []string{"r2"}},
		{"a pending spare goes before a ready one", []Lease{held, ready("r1", old), pending}, 1, 0, 1, []string{"p"}},
		{"the newest ready spares go first", []Lease{ready("r1", old), ready("r2", old), ready("r3", old)}, 0, 0, 1, []string{"r3", "r2"}},
		{"not while VMs are about to be created", []Lease{ready("r1", old), ready("r2", old)}, 0, 1, 0, nil},
		{"not while a live VM waits for its lease", []Lease{ready("r1", old), ready("r2", old)}, 1, 0, 0, nil},
		{"not a spare claimed moments ago", []Lease{held, ready("r1", old), ready("r2", fresh)}, 1, 0, 1, nil},
		{"invalid claims stay, and count", []Lease{held, invalid, ready("r1", old)}, 1, 0, 1, []string{"r1"}},
		{"released leases are Decide's, not surplus", []Lease{held, released, ready("r1", old)}, 1, 0, 1, nil},
	} {
		got := Surplus(tc.leases, tc.live, tc.newVMs, tc.spare, now, 10*time.Second)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: surplus %v, want %v", tc.name, got, tc.want)
		}
	}
}
