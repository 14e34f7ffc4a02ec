package pool

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// demandPriority is the pool queue's priority (controller-runtime's priority queue; routine passes have
// 0) of a pass that new demand starts, and of the pass that comes back when demand's burst window ends.
// During a scale-up of many pools every pool is dirty all the time (its VsphereAgents, Agents and
// AgentMachines change), the pool workers are all busy and a pool waited its turn behind every other
// (docs/performance.md, "Demand first"): an AgentMachine that waits for an Agent now goes first.
const demandPriority = 10

// demandFirst enqueues the pools an AgentMachine maps to, as the mapped handler does, and ahead of
// routine passes when the AgentMachine starts waiting for an Agent (created waiting, or the provider
// newly reports NoSuitableAgents).
func demandFirst(mapFn handler.MapFunc) handler.EventHandler {
	return demandFirstHandler{EventHandler: handler.EnqueueRequestsFromMapFunc(mapFn), mapFn: mapFn}
}

type demandFirstHandler struct {
	handler.EventHandler
	mapFn handler.MapFunc
}

func (h demandFirstHandler) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.EventHandler.Create(ctx, e, q)
	if waitsForAgent(e.Object) {
		h.first(ctx, e.Object, q)
	}
}

func (h demandFirstHandler) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.EventHandler.Update(ctx, e, q)
	if !waitsForAgent(e.ObjectOld) && waitsForAgent(e.ObjectNew) {
		h.first(ctx, e.ObjectNew, q)
	}
}

// first raises the pools' queue entries to demandPriority (the queue keeps the highest priority an
// entry was added with). A queue without priorities has them queued already.
func (h demandFirstHandler) first(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return
	}
	if reqs := h.mapFn(ctx, o); len(reqs) > 0 {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(demandPriority)}, reqs...)
	}
}

func waitsForAgent(o client.Object) bool {
	u, ok := o.(*unstructured.Unstructured)
	return ok && agents.AgentMachineFrom(u).WaitsForAgent()
}

// resultPriority keeps a pass that waits on demand's burst window (creations deferred, not made) at
// demandPriority when it comes back; every other requeue is routine. controller-runtime requeues with the
// priority the pass ran at unless the result says otherwise.
func resultPriority(s *poolScope) *int {
	if s.planned && s.plan.Burst != nil && !s.plan.CloseBurst {
		return ptr.To(demandPriority)
	}
	return ptr.To(0)
}
