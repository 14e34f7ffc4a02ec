package vsphereagent

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
)

// SetupWithManager wires the VsphereAgent controller: its Agent (by label or MAC), the AgentMachine
// that references the Agent, and its pool (ISO path, pause, policy).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.own = poolmemory.NewOwnWrites[*afv1.VsphereAgent]()
	r.registerMemory()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Opts.VMWorkers, RateLimiter: newVMRateLimiter()}).
		For(&afv1.VsphereAgent{}).
		Watches(agents.New(agents.AgentGVK), handler.EnqueueRequestsFromMapFunc(r.vmsForAgent)).
		Watches(agents.New(agents.AgentMachineGVK), handler.EnqueueRequestsFromMapFunc(r.vmsForAgentMachine)).
		Watches(&afv1.VsphereAgentPool{}, handler.EnqueueRequestsFromMapFunc(r.vmsForPool), builder.WithPredicates(poolChangesForVMs())).
		Complete(r)
}

// poolChangesForVMs passes the pool events a VsphereAgent pass depends on: the pool's spec (generation),
// labels, annotations, deletion and cached ISO. Its counters and conditions are not read by a VM's pass;
// without this filter each pool status write (several while it provisions) started a pass of every VM.
func poolChangesForVMs() predicate.Predicate {
	isoChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, okB := e.ObjectOld.(*afv1.VsphereAgentPool)
		after, okA := e.ObjectNew.(*afv1.VsphereAgentPool)
		return !okB || !okA || !equality.Semantic.DeepEqual(before.Status.ISO, after.Status.ISO)
	}}
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
		predicate.LabelChangedPredicate{}, watch.DeletionPredicate(), isoChanged)
}

func (r *Reconciler) vmsForAgent(ctx context.Context, o client.Object) []reconcile.Request {
	if va := o.GetLabels()[afv1.LabelVsphereAgent]; va != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: va}}}
	}
	var out []reconcile.Request
	for _, mac := range agents.AgentFrom(agents.AsUnstructured(o)).MACs {
		out = append(out, r.listVMs(ctx, o.GetNamespace(), watch.IndexVMMAC, mac)...)
	}
	return out
}

func (r *Reconciler) vmsForAgentMachine(ctx context.Context, o client.Object) []reconcile.Request {
	u := agents.AsUnstructured(o)
	name, _, _ := unstructured.NestedString(u.Object, "status", "agentRef", "name")
	ns, _, _ := unstructured.NestedString(u.Object, "status", "agentRef", "namespace")
	if name == "" || ns == "" {
		return r.vmsForPinnedAgentMachine(ctx, u)
	}
	return r.listVMs(ctx, ns, watch.IndexVMAgent, name)
}

func (r *Reconciler) vmsForPool(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listVMs(ctx, o.GetNamespace(), watch.IndexPoolRef, o.GetName())
}

func (r *Reconciler) listVMs(ctx context.Context, ns, index, value string) []reconcile.Request {
	var vas afv1.VsphereAgentList
	if err := r.List(ctx, &vas, client.InNamespace(ns), client.MatchingFields{index: value}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(vas.Items))
	for _, va := range vas.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: va.Namespace, Name: va.Name}})
	}
	return out
}

// vmsForPinnedAgentMachine: a waiting AgentMachine the upstream operator pinned wakes the VMs of the
// pools serving its NodePool, so a free Agent takes its pin (see pinFor).
func (r *Reconciler) vmsForPinnedAgentMachine(ctx context.Context, u *unstructured.Unstructured) []reconcile.Request {
	pin, _, _ := unstructured.NestedString(u.Object, "spec", "agentLabelSelector", "matchLabels", afv1.LabelUpstreamAgentMachine)
	ns, np, ok := strings.Cut(u.GetAnnotations()[agents.AnnotationNodePool], "/")
	if pin == "" || !ok {
		return nil
	}
	var pools afv1.VsphereAgentPoolList
	if err := r.List(ctx, &pools, client.InNamespace(ns), client.MatchingFields{watch.IndexNodePool: np}); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range pools.Items {
		out = append(out, r.listVMs(ctx, ns, watch.IndexPoolRef, p.Name)...)
	}
	return out
}
