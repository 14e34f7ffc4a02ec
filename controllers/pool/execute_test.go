package pool

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// A VsphereAgent create whose response is lost (stored, but the client got a 500) must leave the
// VsphereAgent expected, so the next pass counts it and creates no second one for the same demand (the
// chaos campaign's over-provisioning check caught this behind the API fault proxy). A refusal the server
// answers before serving the request (429, 503) expects nothing.
//
// The creates reach a real API server (envtest); only the answer the client sees is replaced.
func TestLostCreateResponseKeepsTheVsphereAgentExpected(t *testing.T) {
	_, api := testenv.StartForTest(t, testenv.Options{WithoutExternalCRDs: true})
	for i, tc := range []struct {
		name     string
		stored   bool
		err      error
		expected int
	}{
		{"lost response (500)", true, apierrors.NewInternalError(errLost), 1},
		{"server timeout (504)", true, apierrors.NewTimeoutError("stored, no answer", 1), 1},
		{"connection broken", true, errLost, 1},
		{"throttled (429)", false, apierrors.NewTooManyRequests("slow down", 1), 0},
		{"unavailable (503)", false, apierrors.NewServiceUnavailable("later"), 0},
		{"invalid (422)", false, apierrors.NewInvalid(schema.GroupKind{Kind: "VsphereAgent"}, "x", nil), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := &corev1.Namespace{}
			ns.Name = fmt.Sprintf("lost-create-%d", i)
			if err := api.Create(ctx, ns); err != nil {
				t.Fatal(err)
			}
			// The owner need not be stored: only its identity goes into the owner reference.
			pool := &afv1.VsphereAgentPool{}
			pool.Namespace, pool.Name, pool.UID = ns.Name, "pool", types.UID(fmt.Sprintf("pool-uid-%d", i))
			pool.Spec.HostedClusterRef.Name = "hc"
			c := interceptor.NewClient(api, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if tc.stored {
						if err := c.Create(ctx, obj, opts...); err != nil {
							return err
						}
					}
					return tc.err
				},
			})
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			r := &Reconciler{Client: c, Recorder: events.NewRecorder(kevents.NewFakeRecorder(8)), Opts: config.Options{Services: config.Services{Clock: clk}},
				expectations: newExpectations(clk)}
			poolKey := ns.Name + "/pool"
			if err := r.createVsphereAgents(ctx, &poolScope{pool: pool}, poolKey, []string{""}); err == nil {
				t.Fatal("the create error was swallowed")
			}
			var vas afv1.VsphereAgentList
			if err := api.List(ctx, &vas, client.InNamespace(ns.Name)); err != nil {
				t.Fatal(err)
			}
			if tc.stored != (len(vas.Items) == 1) {
				t.Fatalf("%d VsphereAgents stored, want stored=%t", len(vas.Items), tc.stored)
			}
			// The cache has not seen it yet: nothing present.
			if creates, _ := r.expectations.pending(poolKey, sets.New[string]()); creates != tc.expected {
				t.Fatalf("%d creations expected after %v, want %d", creates, tc.err, tc.expected)
			}
			if tc.stored {
				// Once the cache lists it by the name the pass chose, the expectation is met.
				if creates, _ := r.expectations.pending(poolKey, sets.New(vas.Items[0].Name)); creates != 0 {
					t.Fatalf("the stored VsphereAgent %s does not meet the expectation", vas.Items[0].Name)
				}
			}
		})
	}
}

var errLost = errLostResponse{}

type errLostResponse struct{}

func (errLostResponse) Error() string { return "connection reset by peer" }
