package exclusion

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ourCreated := now.Add(-24 * time.Hour)
	own := Own{Namespace: "agent-forge-operator", Created: ourCreated}
	upstream := func(ns string, renewedAgo time.Duration) Lease {
		return Lease{Namespace: ns, Holder: "agent-forge-operator-7d9f_1b2c", RenewTime: now.Add(-renewedAgo), Duration: 15 * time.Second, Created: now.Add(-90 * 24 * time.Hour)}
	}
	for _, tc := range []struct {
		name    string
		leases  []Lease
		own     Own
		blocked bool
		ns      string
		ours    bool
	}{
		{name: "no other Lease", own: own},
		{name: "upstream Lease renewed 2s ago blocks", leases: []Lease{upstream("agent-forge-operator-system", 2*time.Second)}, own: own, blocked: true, ns: "agent-forge-operator-system"},
		{name: "upstream Lease within duration plus slack still blocks", leases: []Lease{upstream("syn-agent-forge-operator", 24*time.Second)}, own: own, blocked: true, ns: "syn-agent-forge-operator"},
		{name: "upstream Lease just past duration plus slack is abandoned", leases: []Lease{upstream("agent-forge-operator-system", 25*time.Second)}, own: own},
		{name: "released Lease (no holder) does not block", leases: []Lease{func() Lease { l := upstream("agent-forge-operator-system", time.Second); l.Holder = ""; return l }()}, own: own},
		{name: "Lease never renewed does not block", leases: []Lease{func() Lease { l := upstream("x", 0); l.RenewTime = time.Time{}; return l }()}, own: own},
		{name: "missing duration uses controller-runtime's 15s", leases: []Lease{func() Lease { l := upstream("x", 20*time.Second); l.Duration = 0; return l }()}, own: own, blocked: true, ns: "x"},
		{name: "our own namespace is never another manager", leases: []Lease{upstream("agent-forge-operator", time.Second)}, own: own},
		{name: "upstream wins even when younger than ours", leases: []Lease{func() Lease { l := upstream("late", time.Second); l.Created = now; return l }()}, own: own, blocked: true, ns: "late"},
		{name: "an older marked install of ours wins", leases: []Lease{func() Lease { l := upstream("first", time.Second); l.Marked = true; return l }()}, own: own, blocked: true, ns: "first", ours: true},
		{name: "a younger marked install of ours waits for us", leases: []Lease{func() Lease { l := upstream("second", time.Second); l.Marked, l.Created = true, now; return l }()}, own: own},
		{name: "as old: the namespace sorting first acts", leases: []Lease{func() Lease { l := upstream("aaa", time.Second); l.Marked, l.Created = true, ourCreated; return l }()}, own: own, blocked: true, ns: "aaa", ours: true},
		{name: "as old: a namespace sorting after ours waits", leases: []Lease{func() Lease { l := upstream("zzz", time.Second); l.Marked, l.Created = true, ourCreated; return l }()}, own: own},
		{name: "without our own Lease any live marked install acts", leases: []Lease{func() Lease { l := upstream("b", time.Second); l.Marked, l.Created = true, now; return l }()}, own: Own{Namespace: "a"}, blocked: true, ns: "b", ours: true},
		{name: "the first blocking Lease by namespace is named", leases: []Lease{upstream("zz", time.Second), upstream("aa", 60*time.Second), upstream("mm", time.Second)}, own: own, blocked: true, ns: "mm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Decide(tc.leases, tc.own, now, DefaultSlack)
			if v.Blocked != tc.blocked || v.Namespace != tc.ns || v.Ours != tc.ours {
				t.Fatalf("verdict %+v, want blocked=%t namespace=%q ours=%t", v, tc.blocked, tc.ns, tc.ours)
			}
			if v.Blocked && (!strings.Contains(v.Message(), tc.ns) || !strings.Contains(v.Message(), v.Holder)) {
				t.Fatalf("message %q names neither the Lease namespace nor its holder", v.Message())
			}
		})
	}
}

// TestVerdictExpiresOnTheInjectedClock: a Lease renewed like controller-runtime's elector (every few
// seconds, 15s duration) blocks at every step; once renewals stop it stops blocking exactly after its
// duration plus the slack.
func TestVerdictExpiresOnTheInjectedClock(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	l := Lease{Namespace: "agent-forge-operator-system", Holder: "h_1", Duration: 15 * time.Second, RenewTime: start}
	own := Own{Namespace: "agent-forge-operator"}
	now := start
	for range 10 { // renewed every 2s
		now = now.Add(2 * time.Second)
		l.RenewTime = now
		if !Decide([]Lease{l}, own, now, DefaultSlack).Blocked {
			t.Fatalf("a Lease renewed at %s does not block", now)
		}
	}
	last := l.RenewTime
	if !Decide([]Lease{l}, own, last.Add(25*time.Second-time.Nanosecond), DefaultSlack).Blocked {
		t.Fatal("the Lease stopped blocking before its duration plus slack")
	}
	if Decide([]Lease{l}, own, last.Add(25*time.Second), DefaultSlack).Blocked {
		t.Fatal("the Lease still blocks after its duration plus slack")
	}
}
