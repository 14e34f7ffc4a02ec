package vsphere

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// TestBreakerStateMachine drives one breaker (threshold 3, cool-down 30 s) through a script of steps on
// a fake clock. Steps: "ok", "fail", "neutral" admit one call and report that outcome; "probe:<o>" admits
// a call that must be the half-open probe and reports o; "rejected" expects an admission to fail fast;
// "admit" admits a call and keeps it in flight (reported later by "late:<o>"); "+<duration>" steps the
// clock. want is the state after the script, gauge the metric.
func TestBreakerStateMachine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   BreakerState
	}{
		{"starts closed", "", BreakerClosed},
		{"failures below the threshold keep it closed", "fail fail", BreakerClosed},
		{"a success resets the count", "fail fail ok fail fail", BreakerClosed},
		{"neutral outcomes neither count nor reset", "fail neutral fail neutral", BreakerClosed},
		{"threshold consecutive failures open it", "fail fail fail", BreakerOpen},
		{"open fails fast during the cool-down", "fail fail fail rejected +29s rejected", BreakerOpen},
		{"after the cool-down it is half-open", "fail fail fail +30s", BreakerHalfOpen},
		{"a successful probe closes it", "fail fail fail +30s probe:ok ok", BreakerClosed},
		{"a failed probe re-opens it for a full cool-down", "fail fail fail +30s probe:fail rejected +29s rejected", BreakerOpen},
		{"then the next probe may close it", "fail fail fail +30s probe:fail +30s probe:ok", BreakerClosed},
		{"only one probe at a time", "fail fail fail +30s admit rejected rejected late:ok", BreakerClosed},
		{"a probe that tells nothing frees the slot", "fail fail fail +30s probe:neutral probe:ok", BreakerClosed},
		{"a late success of a call admitted before opening does not close it",
			"admit fail fail fail late:ok rejected", BreakerOpen},
		{"a late failure while open does not extend the cool-down",
			"admit fail fail fail +20s late:fail +10s", BreakerHalfOpen},
		{"after closing, it takes threshold failures again", "fail fail fail +30s probe:ok fail fail", BreakerClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			vc := "breaker-" + strings.ReplaceAll(tc.name, " ", "-") + ":443"
			b := newBreaker(vc, BreakerOptions{Threshold: 3, CoolDown: 30 * time.Second}, clk)
			outcomes := map[string]outcome{"ok": outcomeSuccess, "fail": outcomeFailure, "neutral": outcomeNeutral}
			var inFlight []bool // probe flags of calls admitted by "admit"
			for i, step := range strings.Fields(tc.script) {
				switch kind, arg, _ := strings.Cut(step, ":"); {
				case strings.HasPrefix(step, "+"):
					d, err := time.ParseDuration(step[1:])
					if err != nil {
						t.Fatal(err)
					}
					clk.SetTime(clk.Now().Add(d))
				case step == "rejected":
					_, err := b.admit()
					var open *CircuitOpenError
					if !errors.Is(err, ErrCircuitOpen) || !errors.As(err, &open) || open.VCenter != vc {
						t.Fatalf("step %d (%s): admit = %v, want a CircuitOpenError for %s", i, step, err, vc)
					}
				case step == "admit":
					probe, err := b.admit()
					if err != nil {
						t.Fatalf("step %d: admit: %v", i, err)
					}
					inFlight = append(inFlight, probe)
				case kind == "late":
					b.done(inFlight[0], outcomes[arg])
					inFlight = inFlight[1:]
				case kind == "probe":
					probe, err := b.admit()
					if err != nil || !probe {
						t.Fatalf("step %d (%s): admit = (probe %v, %v), want the probe", i, step, probe, err)
					}
					b.done(probe, outcomes[arg])
				default:
					o, ok := outcomes[step]
					if !ok {
						t.Fatalf("unknown step %q", step)
					}
					probe, err := b.admit()
					if err != nil {
						t.Fatalf("step %d (%s): admit: %v", i, step, err)
					}
					b.done(probe, o)
				}
			}
			if got := b.State(); got != tc.want {
				t.Fatalf("state = %s, want %s", got, tc.want)
			}
			wantGauge := 1.0
			if tc.want == BreakerClosed {
				wantGauge = 0
			}
			if got := testutil.ToFloat64(metrics.VCenterCircuitOpen.WithLabelValues(vc)); got != wantGauge {
				t.Fatalf("agent_forge_vcenter_circuit_open{vcenter=%q} = %v, want %v", vc, got, wantGauge)
			}
		})
	}
}

func TestCircuitOpenErrorNamesTheVCenterAndTheRetryTime(t *testing.T) {
	err := error(&CircuitOpenError{VCenter: "vc.example.com:443", Failures: 5, RetryAt: time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)})
	for _, want := range []string{"vc.example.com:443", "5 consecutive", "2026-01-01T00:00:30Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	wrapped := classify("FindVM", err)
	if !errors.Is(wrapped, ErrCircuitOpen) || errors.Is(wrapped, ErrTimeout) || Reason(wrapped) != afv1.ReasonVCenterCircuitOpen {
		t.Errorf("classified %v: Is(ErrCircuitOpen) false or reason %q", wrapped, Reason(wrapped))
	}
}
