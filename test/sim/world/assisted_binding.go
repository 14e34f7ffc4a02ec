package world

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim/unstructuredcond"
)

// UnbindOutcome is what assisted-service does with an installed host when the provider unbinds its Agent
// (internal/host/statemachine.go and agent_controller.go shouldReclaimOnUnbind in openshift/assisted-service).
type UnbindOutcome int

const (
	// UnbindReclaim means the image service is on and there is no BareMetalHost (vSphere VMs): the host is
	// reclaimed (reclaiming → reclaiming-rebooting → it boots discovery again) and its Agent comes back
	// unbound (known-unbound) after ReclaimDelay.
	UnbindReclaim UnbindOutcome = iota
	// UnbindPendingUserAction means no reclaim (or it failed): the Agent stays at unbinding-pending-user-action,
	// Bound=False/UnbindingPendingUserAction and Validated=False/Unbinding, unselectable until someone
	// reboots the host into discovery.
	UnbindPendingUserAction
)

// States of an Agent on its way out of a cluster.
const (
	stateReclaiming             = "reclaiming"
	stateUnbindingPendingAction = "unbinding-pending-user-action"
)

// unbinding reports whether the Agent is in one of the states between an unbind and its next discovery.
func unbinding(agent *unstructured.Unstructured) bool {
	state, _, _ := unstructured.NestedString(agent.Object, "status", "debugInfo", "state")
	return state == stateReclaiming || state == "reclaiming-rebooting" || state == stateUnbindingPendingAction
}

// syncBindings plays assisted-service's Agent controller reacting to spec.clusterDeploymentName: an
// approved Agent the provider bound joins the cluster deployment and its installation starts; an Agent
// the provider unbound leaves it (installed hosts are reclaimed or wait for the user, see UnbindOutcome);
// a reclaimed host re-registers unbound after ReclaimDelay.
func (d *Driver) syncBindings(ctx context.Context) error {
	all, err := d.listInPass(ctx, AgentGVK)
	if err != nil {
		return err
	}
	now := d.now()
	var updates []*unstructured.Unstructured
	for _, a := range all {
		if !d.inScope(a.GetNamespace()) || a.GetDeletionTimestamp() != nil {
			continue
		}
		cd, _, _ := unstructured.NestedMap(a.Object, "spec", "clusterDeploymentName")
		approved, _, _ := unstructured.NestedBool(a.Object, "spec", "approved")
		state, _, _ := unstructured.NestedString(a.Object, "status", "debugInfo", "state")
		var conds []cond
		var validations []validation
		next := state
		switch {
		case cd != nil && !unbinding(a) && approved && (!unstructuredcond.IsTrue(a, CondBound) || state == stateInsufficient):
			// Binding, or a bound host waiting on its validations: the cluster-scoped validations join in.
			st := d.boundStatus(all, a)
			conds, validations, next = st.conds, st.validations, st.state
		case cd == nil && unstructuredcond.IsTrue(a, CondBound) && unstructuredcond.IsTrue(a, CondInstalled) && d.opts.UnbindInstalled == UnbindPendingUserAction:
			conds = []cond{
				{Type: CondBound, Status: "False", Reason: ReasonUnbindingPendingUser, Message: "The agent is unbound from the cluster deployment, but its host must be rebooted into the discovery image"},
				{Type: CondValidated, Status: "False", Reason: ReasonUnbinding, Message: "The agent is unbinding"},
			}
			next = stateUnbindingPendingAction
		case cd == nil && unstructuredcond.IsTrue(a, CondBound) && unstructuredcond.IsTrue(a, CondInstalled):
			conds = []cond{
				{Type: CondBound, Status: "False", Reason: ReasonUnbinding, Message: "The agent is being unbound: its host is reclaimed"},
				{Type: CondValidated, Status: "False", Reason: ReasonUnbinding, Message: "The agent is unbinding"},
			}
			next = stateReclaiming
		case cd == nil && unstructuredcond.IsTrue(a, CondBound):
			conds = unboundConditions(approved)
			next = "known-unbound"
		case state == stateReclaiming && now.Sub(unstructuredcond.LastTransition(a, CondBound)) >= d.opts.ReclaimDelay:
			conds = append(unboundConditions(approved), cond{Type: CondValidated, Status: "True", Reason: ReasonValidationsPassing, Message: "The agent's validations are passing"})
			next = "known-unbound"
		}
		st := hostStatus{conds: conds, state: next, validations: validations}
		if conds == nil || !st.changes(a, now) {
			continue
		}
		a = a.DeepCopy() // the list may be a shared cache
		d.applyStatus(a, st, now)
		if next != stateInstalling {
			unstructured.RemoveNestedField(a.Object, "status", "progress", "currentStage")
		}
		updates = append(updates, a)
	}
	return d.forEach(ctx, len(updates), func(ctx context.Context, i int) error {
		a := updates[i]
		if err := d.c.Status().Update(ctx, a); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		d.wrote()
		state, _, _ := unstructured.NestedString(a.Object, "status", "debugInfo", "state")
		d.log.Info("agent binding changed", "agent", client.ObjectKeyFromObject(a), "state", state)
		return nil
	})
}

func unboundConditions(approved bool) []cond {
	return []cond{
		{Type: CondBound, Status: "False", Reason: ReasonUnbound, Message: "The agent is not bound to any cluster deployment"},
		{Type: CondInstalled, Status: "False", Reason: ReasonInstallationNotStarted, Message: "The installation has not yet started"},
		requirementsMet(approved),
	}
}

func requirementsMet(approved bool) cond {
	if approved {
		return cond{Type: CondRequirementsMet, Status: "True", Reason: "AgentIsReady", Message: "The agent is ready to begin the installation"}
	}
	return cond{Type: CondRequirementsMet, Status: "False", Reason: "AgentIsNotApproved", Message: "The agent is not approved"}
}
