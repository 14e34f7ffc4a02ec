package pool

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// TestDemandGoesFirst: an AgentMachine that starts waiting for an Agent (created waiting, or the
// provider newly reports NoSuitableAgents, current or older provider) puts its pool ahead of the pools
// queued for routine passes; any other AgentMachine change queues its pool as a routine pass.
func TestDemandGoesFirst(t *testing.T) {
	pool := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "demand"}}
	am := func(condType, reason, agentRef string) *unstructured.Unstructured {
		u := agents.New(agents.AgentMachineGVK)
		u.SetNamespace("hcp")
		u.SetName("am-1")
		u.SetResourceVersion("1")
		if condType != "" {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": condType, "status": "False", "reason": reason}}, "status", "conditions")
		}
		if agentRef != "" {
			_ = unstructured.SetNestedField(u.Object, agentRef, "status", "agentRef", "name")
		}
		return u
	}
	newer := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		u.SetResourceVersion("2")
		return u
	}
	waiting, olderWaiting := am("AgentReserved", "NoSuitableAgents", ""), am("Ready", "NoSuitableAgents", "")
	notYet, reserved := am("AgentReserved", "AgentNotYetFound", ""), am("AgentReserved", "NoSuitableAgents", "agent-1")
	create := func(o client.Object) func(demandFirstHandler, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		return func(h demandFirstHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: o}, q)
		}
	}
	update := func(old, updated client.Object) func(demandFirstHandler, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		return func(h demandFirstHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
		}
	}
	for _, tc := range []struct {
		name      string
		event     func(demandFirstHandler, workqueue.TypedRateLimitingInterface[reconcile.Request])
		wantFirst bool
	}{
		{name: "created waiting", event: create(waiting), wantFirst: true},
		{name: "created, not waiting yet", event: create(am("", "", ""))},
		{name: "starts waiting", event: update(notYet, newer(waiting.DeepCopy())), wantFirst: true},
		{name: "starts waiting (older provider's Ready)", event: update(am("", "", ""), newer(olderWaiting.DeepCopy())), wantFirst: true},
		{name: "still waiting: a routine write", event: update(waiting, newer(waiting.DeepCopy()))},
		{name: "reserved", event: update(waiting, newer(reserved.DeepCopy()))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := priorityqueue.New[reconcile.Request]("test")
			defer q.ShutDown()
			routine := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "routine"}}
			q.Add(routine)
			h := demandFirst(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{pool} }).(demandFirstHandler)
			tc.event(h, q)
			if q.Len() != 2 {
				t.Fatalf("queue holds %d entries, want 2 (the routine pool and the AgentMachine's)", q.Len())
			}
			got, _, _ := q.GetWithPriority()
			if first := got == pool; first != tc.wantFirst {
				t.Errorf("first out: %v, want the AgentMachine's pool first: %t", got, tc.wantFirst)
			}
		})
	}
}

// TestResultPriority: a pass that waits on demand's burst window comes back ahead of routine passes;
// a pass that created, had no demand or did not plan comes back (if at all) as a routine one.
func TestResultPriority(t *testing.T) {
	burst := &planner.Burst{Value: 3, First: time.Unix(1, 0), LastChange: time.Unix(1, 0)}
	for _, tc := range []struct {
		name string
		s    poolScope
		want int
	}{
		{name: "burst window open: creations deferred", s: poolScope{planned: true, plan: planner.Decisions{Burst: burst}}, want: demandPriority},
		{name: "burst closed: creations made", s: poolScope{planned: true, plan: planner.Decisions{Burst: burst, CloseBurst: true}}},
		{name: "no burst", s: poolScope{planned: true}},
		{name: "not planned", s: poolScope{plan: planner.Decisions{Burst: burst}}},
	} {
		if got := *resultPriority(&tc.s); got != tc.want {
			t.Errorf("%s: priority %d, want %d", tc.name, got, tc.want)
		}
	}
}
