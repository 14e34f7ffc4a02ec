package planner

import (
	"reflect"
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
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
			if got := Spread(tc.domains, tc.n); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Spread = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSurplusFromMostPopulatedDomain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	vm := func(name string, age int, inUse bool) VMState {
		state := VMAvailable
		if inUse {
			state = VMInUse
		}
		return VMState{Name: name, State: state, CreatedAt: t0.Add(time.Duration(age) * time.Minute)}
	}
	cases := []struct {
		name     string
		vms      []VMState
		domainOf map[string]string
		waiting  int
		want     []string
	}{
		{
			name:     "the domain with 3 VMs gives first, then the tie by name",
			vms:      []VMState{vm("a1", 1, false), vm("b1", 2, false), vm("b2", 3, false), vm("b3", 4, false), vm("c1", 5, false)},
			domainOf: map[string]string{"a1": "a", "b1": "b", "b2": "b", "b3": "b", "c1": "c"},
			want:     []string{"b3", "b2", "a1", "b1", "c1"},
		},
		{
			name:     "VMs in use count towards population but are never released",
			vms:      []VMState{vm("a1", 1, true), vm("a2", 2, true), vm("a3", 3, false), vm("b1", 4, false)},
			domainOf: map[string]string{"a1": "a", "a2": "a", "a3": "a", "b1": "b"},
			want:     []string{"a3", "b1"},
		},
		{
			name:     "demand keeps one: the most populated domain gives",
			vms:      []VMState{vm("a1", 1, false), vm("b1", 2, false), vm("b2", 3, false)},
			domainOf: map[string]string{"a1": "a", "b1": "b", "b2": "b"},
			waiting:  2,
			want:     []string{"b2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(Input{Waiting: tc.waiting, VMs: tc.vms, RemoveSurplus: true, DomainOf: tc.domainOf})
			if !reflect.DeepEqual(p.Release, tc.want) {
				t.Fatalf("Release = %v, want %v", p.Release, tc.want)
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
