package preflight

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kevents "k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vspherefake"
)

// TestPlacementVerdictNotInheritedByRecreatedPool: a pool deleted and created again under the same name
// starts at generation 1 again; its placement is checked afresh instead of reusing its predecessor's
// verdict (within the recheck interval), in both directions: a stale refusal would block a good pool, a
// stale pass would let a pool with a bad placement create VMs.
func TestPlacementVerdictNotInheritedByRecreatedPool(t *testing.T) {
	unknownNetwork := vsphere.PlacementProblem{Kind: vsphere.PlacementNetwork, Name: "nope", Message: `network "nope" not found`}
	tests := []struct {
		name              string
		before, after     []vsphere.PlacementProblem
		wantBlockBefore   string
		wantBlockRecreate string
	}{
		{name: "refused pool recreated with a placement that resolves", before: []vsphere.PlacementProblem{unknownNetwork},
			wantBlockBefore: afv1.ReasonNetworkNotFound, wantBlockRecreate: ""},
		{name: "good pool recreated with a placement that does not resolve", after: []vsphere.PlacementProblem{unknownNetwork},
			wantBlockBefore: "", wantBlockRecreate: afv1.ReasonNetworkNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
			fake := vspherefake.New(clk)
			c := &Checker{Recorder: events.NewRecorder(kevents.NewFakeRecorder(10)), Clock: clk, Events: &events.EventLimiter{}}
			pool := func(uid types.UID) *afv1.VsphereAgentPool {
				p := &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "workers", UID: uid, Generation: 1}}
				p.Spec.VSphere = afv1.VSphereSpec{Datacenter: "DC0", DatastoreCluster: "ds", Network: "net"}
				return p
			}

			fake.SetPlacementProblems(tt.before...)
			first := &pass{pool: pool("uid-1"), vs: fake}
			if err := c.checkPlacement(ctx, first); err != nil {
				t.Fatal(err)
			}
			if first.preflightBlock != tt.wantBlockBefore {
				t.Fatalf("first pool blocked by %q, want %q", first.preflightBlock, tt.wantBlockBefore)
			}

			// Deleted and created again a minute later (well within the recheck interval).
			clk.Step(time.Minute)
			fake.SetPlacementProblems(tt.after...)
			again := &pass{pool: pool("uid-2"), vs: fake}
			if err := c.checkPlacement(ctx, again); err != nil {
				t.Fatal(err)
			}
			if again.preflightBlock != tt.wantBlockRecreate {
				t.Fatalf("recreated pool blocked by %q, want %q (its predecessor's verdict reused?)", again.preflightBlock, tt.wantBlockRecreate)
			}
			if got := fake.Calls(vspherefake.CheckPlacement); got != 2 {
				t.Fatalf("CheckPlacement called %d time(s), want 2 (once per pool)", got)
			}

			// The same pool within the interval and generation reuses its own verdict.
			same := &pass{pool: pool("uid-2"), vs: fake}
			if err := c.checkPlacement(ctx, same); err != nil {
				t.Fatal(err)
			}
			if same.preflightBlock != tt.wantBlockRecreate || fake.Calls(vspherefake.CheckPlacement) != 2 {
				t.Fatalf("same pool: blocked by %q after %d checks, want %q after 2", same.preflightBlock, fake.Calls(vspherefake.CheckPlacement), tt.wantBlockRecreate)
			}
		})
	}
}
