package planner

import (
	"reflect"
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	iptr := func(v int) *int { return &v }
	abc := func() []Domain { return []Domain{{Name: "a"}, {Name: "b"}, {Name: "c"}} }
	cases := []struct {
		name    string
		domains []Domain
		n       int
		want    []string
	}{
		{"burst of 9 over 3 empty domains: 3 each", abc(), 9, []string{"a", "b", "c", "a", "b", "c", "a", "b", "c"}},
		{"fewest VMs first", []Domain{{Name: "a", VMs: 2}, {Name: "b", VMs: 0}, {Name: "c", VMs: 1}}, 3, []string{"b", "c", "b"}},
		{"ties by fewest in flight", []Domain{{Name: "a", VMs: 1, InFlight: 1}, {Name: "b", VMs: 1}}, 1, []string{"b"}},
		{"ties by name", []Domain{{Name: "b"}, {Name: "a"}}, 1, []string{"a"}},
		{"skipped domain takes none", []Domain{{Name: "a", Skipped: true}, {Name: "b"}, {Name: "c"}}, 4, []string{"b", "c", "b", "c"}},
		{"maxVMs caps a domain", []Domain{{Name: "a", VMs: 1, MaxVMs: i32(2)}, {Name: "b", VMs: 3}}, 3, []string{"a", "b", "b"}},
		{"headroom caps a domain", []Domain{{Name: "a", Headroom: iptr(1)}, {Name: "b", VMs: 5}}, 3, []string{"a", "b", "b"}},
		{"no headroom: none", []Domain{{Name: "a", Headroom: iptr(0)}}, 2, nil},
		{"every domain full: fewer than asked", []Domain{{Name: "a", MaxVMs: i32(1)}, {Name: "b", Headroom: iptr(1)}}, 5, []string{"a", "b"}},
		{"one implicit domain", []Domain{{Name: ""}}, 2, []string{"", ""}},
		{"nothing asked", abc(), 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := spread(tc.domains, tc.n); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("spread = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Base: time.Minute, Ceiling: 10 * time.Minute}
	for failures, want := range map[int]time.Duration{0: 0, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 4: 8 * time.Minute, 5: 10 * time.Minute, 50: 10 * time.Minute} {
		if got := b.Next(failures); got != want {
			t.Errorf("Next(%d) = %s, want %s", failures, got, want)
		}
	}
}
