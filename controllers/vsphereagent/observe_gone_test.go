package vsphereagent

import (
	"testing"
	"time"
)

// TestGoneStep: a single look-up that finds no VM never declares it gone: the first NotFound makes it
// suspect, the confirming look-up runs only vmGoneConfirmDelay later, and a VM already declared gone
// stays so without a new confirmation.
func TestGoneStep(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		declared  bool
		since     time.Time
		suspected bool
		want      goneStepKind
		wait      time.Duration
	}{
		{"first NotFound: suspect, look again after the delay", false, time.Time{}, false, goneSuspect, vmGoneConfirmDelay},
		{"suspect since a moment: wait for the rest of the delay", false, now.Add(-10 * time.Second), true, goneWait, vmGoneConfirmDelay - 10*time.Second},
		{"suspect since just under the delay", false, now.Add(-vmGoneConfirmDelay + time.Millisecond), true, goneWait, time.Millisecond},
		{"suspect since exactly the delay: confirm", false, now.Add(-vmGoneConfirmDelay), true, goneConfirm, 0},
		{"suspect since long ago (a pass delayed): confirm", false, now.Add(-time.Hour), true, goneConfirm, 0},
		{"declared gone before: stays gone, no second confirmation", true, time.Time{}, false, goneDeclared, 0},
		{"declared gone and suspected: declared wins", true, now, true, goneDeclared, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := goneStep(tt.declared, tt.since, tt.suspected, now)
			if got != tt.want || wait != tt.wait {
				t.Fatalf("goneStep = %d, %s; want %d, %s", got, wait, tt.want, tt.wait)
			}
		})
	}
}
