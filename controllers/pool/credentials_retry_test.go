package pool

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// failingReader answers every Get with err.
type failingReader struct {
	client.Reader
	err error
}

func (f failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return f.err
}

// TestCredentialsReadFailureComesBack: Secrets are not watched, so a pass that could not read the
// credentials Secret asks to come back by itself: soon after an API error (a 503 from the API server
// stalled a waiting AgentMachine in the crash campaign), on a poll when the Secret is missing.
func TestCredentialsReadFailureComesBack(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		name   string
		err    error
		reason string
		want   time.Duration
	}{
		{"API server unavailable", apierrors.NewServiceUnavailable("injected 503"), afv1.ReasonTransient, credentialsTransientRetry},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), afv1.ReasonTransient, credentialsTransientRetry},
		{"Secret missing", apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "vc"), afv1.ReasonCredentialsNotFound, credentialsSecretPoll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{APIReader: failingReader{err: tc.err}, Recorder: events.NewRecorder(kevents.NewFakeRecorder(4))}
			r.Opts = config.Options{Services: config.Services{Clock: clk, Credentials: credentials.NewCache(clk, credentials.DefaultMaxAge)}}
			pool := &afv1.VsphereAgentPool{}
			pool.Namespace, pool.Name = "ns", "pool"
			pool.Spec.VSphere.CredentialsSecretRef = afv1.SecretReference{Name: "vc"}
			s := &poolScope{pool: pool}
			if err := r.connectVSphere(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			if got := credentials.VSphereReason(s.vsErr); got != tc.reason {
				t.Errorf("VSphereReachable reason %q, want %q (%v)", got, tc.reason, s.vsErr)
			}
			if s.requeue != tc.want {
				t.Errorf("requeue after %s, want %s", s.requeue, tc.want)
			}
		})
	}
}
