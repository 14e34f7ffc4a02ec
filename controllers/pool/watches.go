package pool

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
)

// SetupWithManager wires the pool controller: its VsphereAgents, and the external objects mapped to
// pools through field indexes (never by listing the cluster).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.initMemory()
	b := ctrl.NewControllerManagedBy(mgr)
	if r.ISOEvents != nil {
		b = b.WatchesRawSource(source.Channel(r.ISOEvents, &handler.EnqueueRequestForObject{}))
	}
	return b.
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Opts.PoolWorkers}).
		For(&afv1.VsphereAgentPool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, watch.DeletionPredicate()))).
		Owns(&afv1.VsphereAgent{}).
		Watches(agents.New(agents.AgentMachineGVK), handler.EnqueueRequestsFromMapFunc(r.poolsForNodePoolAnnotation)).
		Watches(agents.New(agents.MachineGVK()), handler.EnqueueRequestsFromMapFunc(r.poolsForNodePoolAnnotation), builder.WithPredicates(machineChangesForPools())).
		Watches(agents.New(agents.AgentGVK), handler.EnqueueRequestsFromMapFunc(r.poolsForAgent)).
		Watches(agents.New(agents.InfraEnvGVK), handler.EnqueueRequestsFromMapFunc(r.poolsByIndex(watch.IndexInfraEnv))).
		Watches(agents.New(agents.NodePoolGVK), handler.EnqueueRequestsFromMapFunc(r.poolsByIndex(watch.IndexNodePool))).
		// A pool's image host CA ConfigMap (spec.iso.caBundleRef): metadata only (the data is read
		// uncached when used), so a created or changed bundle starts the pool's pass at once. Secrets
		// are not watched: no cluster-wide Secret list/watch (a Secret reference is polled while missing).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.poolsByIndex(watch.IndexCABundleConfigMap))).
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

func (r *Reconciler) poolsForNodePoolAnnotation(ctx context.Context, o client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(o.GetAnnotations()[agents.AnnotationNodePool], "/")
	if !ok {
		return nil
	}
	return r.listPools(ctx, ns, watch.IndexNodePool, name)
}

func (r *Reconciler) poolsForAgent(ctx context.Context, o client.Object) []reconcile.Request {
	if pool := o.GetLabels()[afv1.LabelPool]; pool != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: pool}}}
	}
	if ie := o.GetLabels()[agents.LabelInfraEnv]; ie != "" {
		return r.listPools(ctx, o.GetNamespace(), watch.IndexInfraEnv, ie)
	}
	return nil
}

func (r *Reconciler) poolsByIndex(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return r.listPools(ctx, o.GetNamespace(), index, o.GetName())
	}
}

func (r *Reconciler) listPools(ctx context.Context, ns, index, value string) []reconcile.Request {
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
