package main

import (
	"strings"
	"testing"
	"time"
)

// pipeline builds samples every 5 s from per-stage count rows (machines, asked, requested, created,
// powered on, registered, prepared, bound); edit lets a case set signals on a sample.
func pipeline(rows [][numStages]int, edit func(i int, s *sample)) []sample {
	out := make([]sample, len(rows))
	for i, r := range rows {
		out[i] = sample{At: time.Duration(i) * 5 * time.Second, Counts: r,
			Op: opSignals{Queue: map[string]int{}, Busy: map[string]int{}, Workers: map[string]int{"pool": 4, "vm": 16}}}
		if edit != nil {
			edit(i, &out[i])
		}
	}
	return out
}

func TestPlateaus(t *testing.T) {
	const target = 10
	full := [numStages]int{10, 10, 10, 10, 10, 10, 10, 10}
	cases := []struct {
		name    string
		samples []sample
		want    []string // substrings, one per reported plateau, in order
		idle    []bool   // OperatorIdle per reported plateau, when given
	}{
		{
			name: "steady progress: no plateau",
			samples: pipeline([][numStages]int{
				{10, 10, 2, 2, 2, 1, 1, 0}, {10, 10, 5, 5, 5, 3, 3, 2}, {10, 10, 8, 8, 8, 6, 6, 5}, {10, 10, 10, 10, 10, 9, 9, 8}, full,
			}, nil),
		},
		{
			name: "the world registers nothing for 20 s: bound held by registered, a world plateau",
			samples: pipeline([][numStages]int{
				{10, 10, 10, 10, 10, 0, 0, 0}, {10, 10, 10, 10, 10, 0, 0, 0}, {10, 10, 10, 10, 10, 0, 0, 0}, {10, 10, 10, 10, 10, 0, 0, 0},
				{10, 10, 10, 10, 10, 0, 0, 0}, full,
			}, func(i int, s *sample) {
				s.World = worldSignals{Phase: "nodepools", PhaseFor: time.Duration(i) * 5 * time.Second, PassFor: time.Duration(i) * 5 * time.Second}
			}),
			want: []string{
				`registered stayed at 0 for 20 s (0 s to 20 s), held by its own step (world: assisted-service registering Agents; the world driver's serial pass took up to 20 s (slowest phase "nodepools", 20 s))`,
				`bound stayed at 0 for 20 s (0 s to 20 s), held by registered (world:`,
			},
		},
		{
			name: "the world in loops: a slow registration loop is named",
			samples: pipeline([][numStages]int{
				{10, 10, 10, 10, 10, 2, 2, 2}, {10, 10, 10, 10, 10, 2, 2, 2}, {10, 10, 10, 10, 10, 2, 2, 2}, {10, 10, 10, 10, 10, 2, 2, 2}, full,
			}, func(i int, s *sample) {
				s.World = worldSignals{Loops: map[string]loopSignals{
					"registration": {RunningFor: time.Duration(i) * 5 * time.Second, Runs: 3},
					"binding":      {LongestRun: time.Second, Runs: 40 + 10*i},
				}}
			}),
			want: []string{
				`registered stayed at 2 for 15 s (0 s to 15 s), held by its own step (world: assisted-service registering Agents; its "registration" loop ran 0 times in the window, runs up to 15.0 s)`,
				`bound stayed at 2 for 15 s (0 s to 15 s), held by registered (world: assisted-service registering Agents; its "registration" loop`,
			},
		},
		{
			name: "VM creation stuck with every worker busy: worker count",
			samples: pipeline([][numStages]int{
				{10, 10, 10, 4, 4, 4, 4, 4}, {10, 10, 10, 4, 4, 4, 4, 4}, {10, 10, 10, 4, 4, 4, 4, 4}, {10, 10, 10, 4, 4, 4, 4, 4}, full,
			}, func(_ int, s *sample) { s.Op.Busy["vm"], s.Op.Queue["vm"] = 16, 40 }),
			want: []string{
				"created stayed at 4 for 15 s (0 s to 15 s), held by its own step (operator: worker count: all 16 vm workers busy, queue up to 40",
				"bound stayed at 4 for 15 s (0 s to 15 s), held by created (operator: worker count",
			},
		},
		{
			name: "no VsphereAgent requested while a breaker is open",
			samples: pipeline([][numStages]int{
				{10, 10, 3, 3, 3, 3, 3, 3}, {10, 10, 3, 3, 3, 3, 3, 3}, {10, 10, 3, 3, 3, 3, 3, 3}, {10, 10, 3, 3, 3, 3, 3, 3}, full,
			}, func(_ int, s *sample) { s.Op.Breakers = 2 }),
			want: []string{
				"requested stayed at 3 for 15 s (0 s to 15 s), held by its own step (operator: breaker: 2 pool(s) RegistrationHealthy=False",
				"bound stayed at 3 for 15 s (0 s to 15 s), held by requested (operator: breaker",
			},
		},
		{
			name: "no VsphereAgent requested, queue empty, workers idle, retries rising: backoff",
			samples: pipeline([][numStages]int{
				{10, 10, 3, 3, 3, 3, 3, 3}, {10, 10, 3, 3, 3, 3, 3, 3}, {10, 10, 3, 3, 3, 3, 3, 3}, {10, 10, 3, 3, 3, 3, 3, 3}, full,
			}, func(i int, s *sample) { s.Op.Retries = 10 * i }),
			want: []string{
				"requested stayed at 3 for 15 s (0 s to 15 s), held by its own step (operator: backoff: 30 rate-limited requeues)",
				"bound stayed at 3 for 15 s",
			},
			idle: []bool{false, false},
		},
		{
			name: "no VsphereAgent requested and nothing busy: a timer (debounce)",
			samples: pipeline([][numStages]int{
				{10, 10, 0, 0, 0, 0, 0, 0}, {10, 10, 0, 0, 0, 0, 0, 0}, {10, 10, 0, 0, 0, 0, 0, 0}, {10, 10, 0, 0, 0, 0, 0, 0}, full,
			}, nil),
			want: []string{
				"requested stayed at 0 for 15 s (0 s to 15 s), held by its own step (operator: timers: pool queue empty and workers idle",
				"bound stayed at 0 for 15 s",
			},
			idle: []bool{true, true},
		},
		{
			name: "an AgentMachine the provider has not marked waiting: requested is held by asked, a world plateau",
			samples: pipeline([][numStages]int{
				{10, 9, 9, 9, 9, 9, 9, 9}, {10, 9, 9, 9, 9, 9, 9, 9}, {10, 9, 9, 9, 9, 9, 9, 9}, {10, 9, 9, 9, 9, 9, 9, 9}, full,
			}, func(_ int, s *sample) { s.Op.Busy["pool"] = 4 }),
			want: []string{
				"asked stayed at 9 for 15 s (0 s to 15 s), held by its own step (world: Agent CAPI provider marking AgentMachines NoSuitableAgents",
				"bound stayed at 9 for 15 s (0 s to 15 s), held by asked (world:",
			},
			idle: []bool{false, false},
		},
		{
			name: "a stage that waits for its upstream is not reported on its own (only the last stage is)",
			samples: pipeline([][numStages]int{
				{10, 10, 10, 10, 10, 5, 5, 5}, {10, 10, 10, 10, 10, 5, 5, 5}, {10, 10, 10, 10, 10, 5, 5, 5}, {10, 10, 10, 10, 10, 5, 5, 5}, full,
			}, nil),
			want: []string{
				"registered stayed at 5 for 15 s",
				"bound stayed at 5 for 15 s (0 s to 15 s), held by registered (world",
			},
		},
		{
			name: "agents registered but not bound: the provider holds bound",
			samples: pipeline([][numStages]int{
				{10, 10, 10, 10, 10, 10, 10, 6}, {10, 10, 10, 10, 10, 10, 10, 6}, {10, 10, 10, 10, 10, 10, 10, 6}, {10, 10, 10, 10, 10, 10, 10, 6}, full,
			}, nil),
			want: []string{"bound stayed at 6 for 15 s (0 s to 15 s), held by its own step (world: Agent CAPI provider binding"},
		},
		{
			name: "a stall shorter than the minimum is no plateau",
			samples: pipeline([][numStages]int{
				{10, 10, 10, 10, 10, 5, 5, 5}, {10, 10, 10, 10, 10, 5, 5, 5}, {10, 10, 10, 10, 10, 5, 5, 5}, full,
			}, nil),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := plateaus(tc.samples, target, 15*time.Second)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d plateaus, want %d:\n%v", len(got), len(tc.want), got)
			}
			for i, p := range got {
				if !strings.Contains(p.String(), tc.want[i]) {
					t.Errorf("plateau %d:\n got %s\nwant it to contain %s", i, p, tc.want[i])
				}
				if tc.idle != nil && p.OperatorIdle != tc.idle[i] {
					t.Errorf("plateau %d (%s): OperatorIdle %v, want %v", i, p, p.OperatorIdle, tc.idle[i])
				}
			}
		})
	}
}

func TestHolderAt(t *testing.T) {
	cases := []struct {
		counts [numStages]int
		of     stage
		want   stage
	}{
		{[numStages]int{10, 10, 10, 10, 10, 10, 10, 3}, stageBound, stageBound},
		{[numStages]int{10, 10, 10, 10, 10, 3, 3, 3}, stageBound, stageRegistered},
		{[numStages]int{10, 10, 4, 4, 4, 4, 4, 4}, stageBound, stageRequested},
		{[numStages]int{4, 4, 4, 4, 4, 4, 4, 4}, stageBound, stageMachines},
		{[numStages]int{10, 10, 10, 10, 10, 10, 10, 10}, stageBound, stageMachines},
		{[numStages]int{10, 10, 10, 7, 7, 7, 7, 7}, stagePoweredOn, stageCreated},
	}
	for _, tc := range cases {
		if got := holderAt(tc.counts, 10, tc.of); got != tc.want {
			t.Errorf("holderAt(%v, %s) = %s, want %s", tc.counts, tc.of, got, tc.want)
		}
	}
}
