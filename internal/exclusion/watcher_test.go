package exclusion

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// leaseReader answers the watcher's List with leases, or with err when set (a pure unit: the rule
// under test is the watcher's, not the API server's).
type leaseReader struct {
	leases []coordinationv1.Lease
	err    error
	lists  int
}

func (r *leaseReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not used")
}

func (r *leaseReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	r.lists++
	if r.err != nil {
		return r.err
	}
	list.(*coordinationv1.LeaseList).Items = append([]coordinationv1.Lease(nil), r.leases...)
	return nil
}

// TestGateFailsClosedAfterTheGrace: reads that fail keep the last verdict for the grace period from the
// first failure, then close the gate (Unreadable, the metric at 1, OnChange called once) until a read
// succeeds again. Steps run on an injected clock.
func TestGateFailsClosedAfterTheGrace(t *testing.T) {
	start := time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)
	upstream := coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agent-forge-operator-system", Name: "agent-forge-operator.containeroo.ch"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("upstream_1"), LeaseDurationSeconds: ptr.To[int32](15)},
	}
	readFailed := errors.New(`leases.coordination.k8s.io is forbidden: User "system:serviceaccount:x:y" cannot list resource "leases"`)
	type step struct {
		after      time.Duration // the clock moves this much before the step
		fail       bool          // the read fails
		other      bool          // upstream's Lease is live (when the read succeeds)
		blocked    bool
		unreadable bool
		metric     float64
		changes    int // OnChange calls so far
	}
	for _, tc := range []struct {
		name  string
		grace time.Duration
		steps []step
	}{
		{name: "no read yet: closed", steps: []step{{fail: true, blocked: true, unreadable: true}}},
		{name: "one failed read keeps the open verdict within the grace", steps: []step{
			{changes: 1},
			{after: 30 * time.Second, fail: true, changes: 1},
			{after: 14 * time.Second, fail: true, changes: 1},
			{after: 2 * time.Second, changes: 1},
		}},
		{name: "failing for the default grace (one Lease duration) closes the gate", steps: []step{
			{changes: 1},
			{after: 30 * time.Second, fail: true, changes: 1},
			{after: 15*time.Second - time.Nanosecond, fail: true, changes: 1},
			{after: time.Nanosecond, fail: true, blocked: true, unreadable: true, metric: 1, changes: 2},
			{after: time.Hour, fail: true, blocked: true, unreadable: true, metric: 1, changes: 2},
			{after: time.Second, blocked: false, changes: 3},
		}},
		{name: "the grace counts from the first failure after the last success", steps: []step{
			{changes: 1},
			{after: 30 * time.Second, fail: true, changes: 1},
			{after: 10 * time.Second, changes: 1},
			{after: 30 * time.Second, fail: true, changes: 1},
			{after: 10 * time.Second, fail: true, changes: 1},
			{after: 5 * time.Second, fail: true, blocked: true, unreadable: true, metric: 1, changes: 2},
		}},
		{name: "a blocking verdict stays blocked, then names the unreadable Leases", steps: []step{
			{other: true, blocked: true, changes: 1},
			{after: 5 * time.Second, fail: true, blocked: true, changes: 1},
			{after: 15 * time.Second, fail: true, blocked: true, unreadable: true, metric: 1, changes: 2},
		}},
		{name: "a configured grace", grace: time.Minute, steps: []step{
			{changes: 1},
			{after: 30 * time.Second, fail: true, changes: 1},
			{after: 59 * time.Second, fail: true, changes: 1},
			{after: time.Second, fail: true, blocked: true, unreadable: true, metric: 1, changes: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := &leaseReader{}
			changes := 0
			w := &Watcher{Reader: r, Clock: clk, LeaseName: "agent-forge-operator.containeroo.ch", Namespace: "agent-forge-operator",
				Grace: tc.grace, Log: logr.Discard(), OnChange: func() { changes++ }}
			metrics.ManagerLeasesUnreadable.Set(0)
			for i, s := range tc.steps {
				clk.Step(s.after)
				r.err = nil
				if s.fail {
					r.err = readFailed
				}
				r.leases = nil
				if s.other {
					l := upstream.DeepCopy()
					l.Spec.RenewTime = &metav1.MicroTime{Time: clk.Now()}
					r.leases = []coordinationv1.Lease{*l}
				}
				w.check(context.Background()) // the periodic read
				g := w.Check(context.Background())
				if g.Blocked != s.blocked || g.Unreadable != s.unreadable {
					t.Fatalf("step %d: gate %+v, want blocked=%t unreadable=%t", i, g, s.blocked, s.unreadable)
				}
				if s.unreadable && (!strings.Contains(g.Message, "could not be read") || (s.fail && !strings.Contains(g.Message, "forbidden"))) {
					t.Fatalf("step %d: message %q does not say the Leases are unreadable and why", i, g.Message)
				}
				if got := testutil.ToFloat64(metrics.ManagerLeasesUnreadable); got != s.metric {
					t.Fatalf("step %d: agent_forge_manager_leases_unreadable = %v, want %v", i, got, s.metric)
				}
				if changes != s.changes {
					t.Fatalf("step %d: OnChange called %d times, want %d", i, changes, s.changes)
				}
			}
		})
	}
}
