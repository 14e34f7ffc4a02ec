package chaos

import (
	"strings"
	"testing"
)

// The API-fault minimum fails a campaign whose proxy injected too few faults of a kind, or none at all.
func TestFaultMinimum(t *testing.T) {
	all := map[string]int{"lost-response": 4, "429": 3, "503": 5, "watch-cut": 2, "slow": 9}
	for _, tc := range []struct {
		name, env string
		proxyOn   bool
		counts    map[string]int
		short     string // "" when the minimum is met
		bad       bool
	}{
		{name: "default with the proxy: 1 per kind, met", proxyOn: true, counts: all},
		{name: "default with the proxy: a run with 0 faults fails", proxyOn: true, counts: map[string]int{},
			short: "lost-response 0 < 1, 429 0 < 1, 503 0 < 1, watch-cut 0 < 1, slow 0 < 1"},
		{name: "default without the proxy: none", counts: map[string]int{}},
		{name: "set without the proxy fails", env: "1", counts: map[string]int{}, short: "lost-response 0 < 1"},
		{name: "per kind", env: "3", proxyOn: true, counts: all, short: "watch-cut 2 < 3"},
		{name: "total", env: "total=30", proxyOn: true, counts: all, short: "total 23 < 30"},
		{name: "one kind", env: "total=20,slow=10", proxyOn: true, counts: all, short: "slow 9 < 10"},
		{name: "unknown kind", env: "timeout=1", bad: true},
		{name: "not a number", env: "slow=x", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseMinFaults(tc.env, tc.proxyOn)
			if (err != nil) != tc.bad {
				t.Fatalf("parse %q: err %v, want error %t", tc.env, err, tc.bad)
			}
			if tc.bad {
				return
			}
			got := strings.Join(m.shortfall(tc.counts), ", ")
			if tc.short == "" && got != "" || tc.short != "" && !strings.HasPrefix(got, tc.short) {
				t.Fatalf("minimum %s on %v: shortfall %q, want %q", m, tc.counts, got, tc.short)
			}
		})
	}
}
