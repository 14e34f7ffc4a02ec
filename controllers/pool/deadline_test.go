package pool

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// TestPassTimeoutReason: a pass cut by its deadline reads as a vCenter timeout (the VCenterTimeout
// reason on VSphereReachable), also when wrapped, and its message names the deadline and the step.
func TestPassTimeoutReason(t *testing.T) {
	err := error(&passTimeoutError{timeout: 2 * time.Minute, phase: "logging in to vCenter"})
	for _, e := range []error{err, fmt.Errorf("pool t1/hung: %w", err)} {
		if !errors.Is(e, vsphere.ErrTimeout) {
			t.Errorf("errors.Is(%v, ErrTimeout) = false", e)
		}
		if got := credentials.VSphereReason(e); got != afv1.ReasonVCenterTimeout {
			t.Errorf("VSphereReason(%v) = %q, want %q", e, got, afv1.ReasonVCenterTimeout)
		}
	}
	for _, want := range []string{"2m0s deadline", "pool pass timeout", "while logging in to vCenter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if errors.Is(err, vsphere.ErrCircuitOpen) {
		t.Error("a pass timeout is not an open circuit")
	}
}
