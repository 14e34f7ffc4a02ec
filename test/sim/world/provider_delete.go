package world

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// unboundStates are the Agent states (status.debugInfo.state) at which the provider releases the
// Machine's pre-terminate hook. unbinding-pending-user-action counts as done: the Machine goes while the
// host still runs the installed OS.
var unboundStates = map[string]bool{
	"discovering-unbound": true, "known-unbound": true, "disconnected-unbound": true, "insufficient-unbound": true,
	"disabled-unbound": true, "unbinding-pending-user-action": true, "error": true,
}

// handleDeletionHook is the provider's handleDeletionHook, run once CAPI reports the Machine Deleting with
// reason WaitingForPreTerminateHook (after the drain): unbind the Agent (one Update clearing the label,
// the namespace annotation, clusterDeploymentName and the bootstrap fields), then release the hook and the
// AgentMachine's finalizer once the Agent is in an unbound state. The state check reads the Agent as it was
// before the unbinding write, so the unbinding pass nearly always waits for the next one (upstream polls
// every 5 s). CAPI, not the provider, then deletes the AgentMachine and the Node.
func (d *Driver) handleDeletionHook(ctx context.Context, am, machine *unstructured.Unstructured) error {
	if _, held := machine.GetAnnotations()[AnnotationPreTerminateHook]; !held && !controllerutil.ContainsFinalizer(am, FinalizerAgentMachine) {
		return nil
	}
	agentName, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "name")
	if agentName == "" || paused(am) {
		return d.releaseHook(ctx, am, machine, "no agent")
	}
	agentNS, _, _ := unstructured.NestedString(am.Object, "status", "agentRef", "namespace")
	agent := newObject(AgentGVK)
	if err := d.c.Get(ctx, types.NamespacedName{Namespace: agentNS, Name: agentName}, agent); err != nil {
		if apierrors.IsNotFound(err) {
			return d.releaseHook(ctx, am, machine, "agent gone")
		}
		return err
	}
	state, _, _ := unstructured.NestedString(agent.Object, "status", "debugInfo", "state")
	_, labelled := agent.GetLabels()[LabelAgentMachineRef]
	cd, _, _ := unstructured.NestedMap(agent.Object, "spec", "clusterDeploymentName")
	if labelled || cd != nil {
		unbound := agent.DeepCopy()
		lbls := unbound.GetLabels()
		delete(lbls, LabelAgentMachineRef)
		unbound.SetLabels(lbls)
		ann := unbound.GetAnnotations()
		delete(ann, AnnotationAgentMachineRefNamespace)
		unbound.SetAnnotations(ann)
		bootstrap{}.applyTo(unbound)
		unstructured.RemoveNestedField(unbound.Object, "spec", "clusterDeploymentName")
		if err := d.c.Update(ctx, unbound); err != nil {
			return err
		}
		d.wrote()
		d.log.Info("agent unbinding", "agent", client.ObjectKeyFromObject(agent), "agentMachine", client.ObjectKeyFromObject(am))
	}
	if !unboundStates[state] {
		return nil // requeue: the Agent has not reached an unbound state yet
	}
	return d.releaseHook(ctx, am, machine, state)
}

// releaseHook removes the pre-terminate hook from the Machine and the finalizer from the AgentMachine.
func (d *Driver) releaseHook(ctx context.Context, am, machine *unstructured.Unstructured, why string) error {
	if ann := machine.GetAnnotations(); ann != nil {
		if _, ok := ann[AnnotationPreTerminateHook]; ok {
			delete(ann, AnnotationPreTerminateHook)
			machine.SetAnnotations(ann)
			if err := d.c.Update(ctx, machine); err != nil {
				return err
			}
			d.wrote()
		}
	}
	if controllerutil.ContainsFinalizer(am, FinalizerAgentMachine) {
		// No optimistic lock, as the provider's patch helper: CAPI marks the AgentMachine deleting the moment
		// the hook goes, and a conflict here would leave the finalizer (the Machine's reason has moved on).
		patch := client.MergeFrom(am.DeepCopy())
		controllerutil.RemoveFinalizer(am, FinalizerAgentMachine)
		if err := d.c.Patch(ctx, am, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
		d.wrote()
	}
	d.log.Info("pre-terminate hook released", "machine", client.ObjectKeyFromObject(machine), "reason", why)
	return nil
}
