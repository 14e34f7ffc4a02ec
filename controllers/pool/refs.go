package pool

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
)

// referenceMismatch compares the pool's spec.hostedClusterRef and spec.controlPlaneNamespace with what its
// NodePool says: the HostedCluster is the NodePool's spec.clusterName (same namespace), and HyperShift
// renders the NodePool's Machines and AgentMachines in that HostedCluster's control plane namespace. It
// returns the reason of the first disagreement ("" when both agree) and a message naming every expected
// value. A NodePool without spec.clusterName (HyperShift requires it) gives no verdict.
func referenceMismatch(spec *afv1.VsphereAgentPoolSpec, np agents.NodePool) (reason, message string) {
	if np.ClusterName == "" {
		return "", ""
	}
	var msgs []string
	if spec.HostedClusterRef.Name != np.ClusterName {
		reason = afv1.ReasonHostedClusterMismatch
		msgs = append(msgs, fmt.Sprintf("spec.hostedClusterRef.name is %q but NodePool %s belongs to HostedCluster %q (its spec.clusterName): expected hostedClusterRef.name %q",
			spec.HostedClusterRef.Name, np.Name, np.ClusterName, np.ClusterName))
	}
	if want := agents.HostedControlPlaneNamespace(np.Namespace, np.ClusterName); spec.ControlPlaneNamespace != want {
		if reason == "" {
			reason = afv1.ReasonControlPlaneNamespaceMismatch
		}
		msgs = append(msgs, fmt.Sprintf("spec.controlPlaneNamespace is %q but HyperShift renders the AgentMachines of NodePool %s in %q: expected controlPlaneNamespace %q (immutable: re-create the pool with it)",
			spec.ControlPlaneNamespace, np.Name, want, want))
	}
	if reason == "" {
		return "", ""
	}
	return reason, strings.Join(msgs, "; ") + "; the pool cannot see the NodePool's demand and takes no action"
}

// checkRefs ends the pass when the pool's references disagree with its NodePool: it would see no
// AgentMachine (DemandObserved=True with 0 of 0 before), so it neither creates nor releases VMs until the
// spec is fixed. The refusal is a condition (setRefsStatus) and a rate-limited Warning Event. A missing
// NodePool is the preflight's to report (NodePoolNotFound).
func (r *Reconciler) checkRefs(ctx context.Context, s *poolScope) error {
	p := s.pool
	u := agents.New(agents.NodePoolGVK)
	err := r.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.NodePoolRef.Name}, u)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading NodePool %s: %w", p.Spec.NodePoolRef.Name, err)
	}
	topic := client.ObjectKeyFromObject(p).String() + "/references"
	reason, msg := referenceMismatch(&p.Spec, agents.NodePoolFrom(u))
	if reason == "" {
		r.refusalEvents.Clear(topic)
		return nil
	}
	s.refsReason, s.refsMessage = reason, msg
	if r.refusalEvents.Allow(topic, reason, r.Opts.Clock.Now()) {
		r.Recorder.Eventf(p, nil, "Warning", reason, events.ActionPreflight, "%s", msg)
	}
	return errStop
}

// setRefsStatus writes a reference mismatch as DemandObserved=False and Ready=False and keeps
// agent_forge_pool_demand_unobserved (read by the stalled-demand alert). It reports whether it did: the
// pass then observed nothing else, and the pool's counters stay as last observed.
func (r *Reconciler) setRefsStatus(s *poolScope) bool {
	p := s.pool
	metrics.PoolDemandUnobserved.DeletePartialMatch(map[string]string{metrics.LabelPoolNamespace: p.Namespace, "pool": p.Name})
	if s.refsReason == "" {
		return false
	}
	metrics.PoolDemandUnobserved.WithLabelValues(p.Namespace, p.Name, s.refsReason).Set(1)
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionDemandObserved, false, s.refsReason, s.refsMessage, p.Generation)
	conditions.SetCondition(&p.Status.Conditions, afv1.ConditionReady, false, s.refsReason, s.refsMessage, p.Generation)
	return true
}
