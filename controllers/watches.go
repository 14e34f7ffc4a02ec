package controllers

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/shared"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// SetupWithManager wires the pool controller: its VsphereAgents, and the external objects mapped to
// pools through field indexes (never by listing the cluster).
func (r *PoolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.expectations == nil {
		r.expectations = newExpectations(r.Opts.Clock)
	}
	r.debounce = newDebouncer(r.Opts.Clock, r.Opts.DebounceIdle, r.Opts.DebounceMax)
	r.orphanScans = newLastRun()
	r.statusWrites = newDebouncer(clock.RealClock{}, r.Opts.StatusBatchInterval, r.Opts.StatusBatchMax)
	r.own = shared.NewOwnWrites[*afv1.VsphereAgentPool]()
	b := ctrl.NewControllerManagedBy(mgr)
	if r.isoEvents != nil {
		b = b.WatchesRawSource(source.Channel(r.isoEvents, &handler.EnqueueRequestForObject{}))
	}
	return b.
		Named("vsphereagentpool").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Opts.PoolWorkers}).
		For(&afv1.VsphereAgentPool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, shared.DeletionPredicate()))).
		Owns(&afv1.VsphereAgent{}).
		Watches(agents.New(agents.AgentMachineGVK), handler.EnqueueRequestsFromMapFunc(r.poolsForNodePoolAnnotation)).
		Watches(agents.New(agents.MachineGVK()), handler.EnqueueRequestsFromMapFunc(r.poolsForNodePoolAnnotation), builder.WithPredicates(machineChangesForPools())).
		Watches(agents.New(agents.AgentGVK), handler.EnqueueRequestsFromMapFunc(r.poolsForAgent)).
		Watches(agents.New(agents.InfraEnvGVK), handler.EnqueueRequestsFromMapFunc(r.poolsByIndex(shared.IndexInfraEnv))).
		Watches(agents.New(agents.NodePoolGVK), handler.EnqueueRequestsFromMapFunc(r.poolsByIndex(shared.IndexNodePool))).
		Complete(r)
}

// machineChangesForPools passes the Machine events a pool's pass depends on: a Machine appearing, going
// (or starting to), or moving to another NodePool. The pool reads nothing else of a Machine; CAPI's
// status writes (several per Machine while it provisions) would otherwise each start a pool pass.
func machineChangesForPools() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp()) ||
			e.ObjectOld.GetAnnotations()[agents.AnnotationNodePool] != e.ObjectNew.GetAnnotations()[agents.AnnotationNodePool]
	}}
}

func (r *PoolReconciler) poolsForNodePoolAnnotation(ctx context.Context, o client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(o.GetAnnotations()[agents.AnnotationNodePool], "/")
	if !ok {
		return nil
	}
	return r.listPools(ctx, ns, shared.IndexNodePool, name)
}

func (r *PoolReconciler) poolsForAgent(ctx context.Context, o client.Object) []reconcile.Request {
	if pool := o.GetLabels()[afv1.LabelPool]; pool != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: pool}}}
	}
	if ie := o.GetLabels()[agents.LabelInfraEnv]; ie != "" {
		return r.listPools(ctx, o.GetNamespace(), shared.IndexInfraEnv, ie)
	}
	return nil
}

func (r *PoolReconciler) poolsByIndex(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.listPools(ctx, o.GetNamespace(), index, o.GetName())
	}
}

func (r *PoolReconciler) listPools(ctx context.Context, ns, index, value string) []reconcile.Request {
	var pools afv1.VsphereAgentPoolList
	if err := r.List(ctx, &pools, client.InNamespace(ns), client.MatchingFields{index: value}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(pools.Items))
	for _, p := range pools.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return out
}

// SetupWithManager wires the VsphereAgent controller: its Agent (by label or MAC), the AgentMachine
// that references the Agent, and its pool (ISO path, pause, policy).
func (r *VsphereAgentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.own = shared.NewOwnWrites[*afv1.VsphereAgent]()
	return ctrl.NewControllerManagedBy(mgr).
		Named("vsphereagent").
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
		predicate.LabelChangedPredicate{}, shared.DeletionPredicate(), isoChanged)
}

func (r *VsphereAgentReconciler) vmsForAgent(ctx context.Context, o client.Object) []reconcile.Request {
	if va := o.GetLabels()[afv1.LabelVsphereAgent]; va != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: va}}}
	}
	var out []reconcile.Request
	for _, mac := range agents.AgentFrom(shared.AsUnstructured(o)).MACs {
		out = append(out, r.listVMs(ctx, o.GetNamespace(), shared.IndexVMMAC, mac)...)
	}
	return out
}

func (r *VsphereAgentReconciler) vmsForAgentMachine(ctx context.Context, o client.Object) []reconcile.Request {
	u := shared.AsUnstructured(o)
	name, _, _ := unstructured.NestedString(u.Object, "status", "agentRef", "name")
	ns, _, _ := unstructured.NestedString(u.Object, "status", "agentRef", "namespace")
	if name == "" || ns == "" {
		return nil
	}
	return r.listVMs(ctx, ns, shared.IndexVMAgent, name)
}

func (r *VsphereAgentReconciler) vmsForPool(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listVMs(ctx, o.GetNamespace(), shared.IndexPoolRef, o.GetName())
}

func (r *VsphereAgentReconciler) listVMs(ctx context.Context, ns, index, value string) []reconcile.Request {
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
