package vsphereagent

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
)

// trackBinding follows the Agent CAPI provider: Available → Bound (with the Machine) → Released.
func (r *Reconciler) trackBinding(ctx context.Context, s *vmScope) (bool, error) {
	va, a := s.va, s.agent
	if a == nil {
		if va.Status.VM.AgentName == "" {
			r.setPhase(va, afv1.VMPhaseProvisioning, afv1.ReasonAwaitingRegistration)
			return true, nil
		}
		// The Agent vanished: never destroy a VM whose Machine still exists.
		if va.Status.VM.MachineName != "" {
			m := agents.New(agents.MachineGVK())
			err := r.Get(ctx, types.NamespacedName{Namespace: s.pool.Spec.ControlPlaneNamespace, Name: va.Status.VM.MachineName}, m)
			if err == nil {
				r.setPhase(va, afv1.VMPhaseBound, afv1.ReasonAgentMissing)
				s.requeueAfter(time.Minute)
				return true, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		if va.Status.VM.MachineName == "" && (va.Status.VM.Phase == afv1.VMPhaseAvailable || va.Status.VM.Phase == afv1.VMPhaseProvisioning) {
			// Deleted by hand before any Machine used it: the host registers again when it reboots
			// (assisted-service deregisters it; its agent stops asking until then). Wait for that under
			// the registration timeout (checkLiveness) instead of destroying a sound VM at once.
			r.setPhase(va, afv1.VMPhaseProvisioning, afv1.ReasonAgentMissing)
			return true, nil
		}
		r.setPhase(va, afv1.VMPhaseReleased, afv1.ReasonAgentMissing)
		return true, nil
	}
	phase, reason := bindingPhase(va.Status.VM.Phase, *a)
	if phase == afv1.VMPhaseBound {
		machine := ""
		list := agents.NewList(agents.AgentMachineGVK)
		if err := r.List(ctx, list, client.InNamespace(s.pool.Spec.ControlPlaneNamespace), client.MatchingFields{watch.IndexAgentMachineRef: a.Name}); err != nil {
			return false, err
		}
		for i := range list.Items {
			if am := agents.AgentMachineFrom(&list.Items[i]); am.OwnerMachine != "" {
				machine = am.OwnerMachine
			}
		}
		if machine == "" {
			machine = r.reservingMachine(ctx, s)
		}
		if machine != "" {
			va.Status.VM.MachineName = machine
		}
	}
	if reason != va.Status.VM.Reason {
		// A Warning Event once, when the status saying so is written (a conflicting write is retried by a
		// pass that sees the old reason again).
		var action, msg string
		switch reason {
		case afv1.ReasonInstallingPendingUserAction:
			action, msg = events.ActionObserveVM, installingPendingUserActionMessage(va.Status.VM.Name, a.Name, a.StateInfo)
		case afv1.ReasonUnbindingPendingUserAction:
			action, msg = events.ActionUnbindAgent, unbindingPendingUserActionMessage(va.Status.VM.Name, a.Name, va.Status.VM.MachineName)
		}
		if msg != "" {
			s.afterWrite = append(s.afterWrite, func() { r.Recorder.Eventf(va, nil, "Warning", reason, action, "%s", msg) })
		}
	}
	r.setPhase(va, phase, reason)
	return true, nil
}

// bindingPhase decides the VM's phase from its registered Agent and the phase the VM had (the Agent
// vanishing is trackBinding's). First match wins:
//  1. the Agent is reserved or bound (label, Bound=True or a cluster deployment): Bound/AgentBound, or
//     Bound/InstallingPendingUserAction while its host booted the discovery image again instead of its disk
//     (it still backs its Machine: reported, never released);
//  2. it awaits a reboot into discovery (unbinding-pending-user-action: the provider unbound an installed
//     host and assisted-service did not reclaim it): Released/UnbindingPendingUserAction, whatever the
//     phase was: the VM runs the installed OS of a worker that is gone, it is never capacity again;
//  3. it is on its way out of a cluster otherwise (unbinding, reclaiming, reclaiming-rebooting), or the
//     VM was Bound or Released before: Released/AgentUnbound (unbound after use);
//  4. its host fails assisted-service's validations (Agent.FailsValidations): Provisioning/HostValidationsFailing,
//     in flight and no supply (checkValidations fails it at once for its hardware, else after
//     registrationTimeout, unless the host recovers);
//  5. otherwise: Available/AgentPrepared.
//
// Released is never supply (planner.Lifecycle); the pool removes a Released VM only once a fresh read
// shows its Agent unbound and no Machine referencing it (release, reconcileDelete).
func bindingPhase(prev afv1.VMPhase, a agents.Agent) (afv1.VMPhase, string) {
	switch {
	case a.IsBound() && a.BootedDiscoveryAgain():
		return afv1.VMPhaseBound, afv1.ReasonInstallingPendingUserAction
	case a.IsBound():
		return afv1.VMPhaseBound, afv1.ReasonAgentBound
	case a.AwaitsRebootIntoDiscovery():
		return afv1.VMPhaseReleased, afv1.ReasonUnbindingPendingUserAction
	case a.IsUnbinding() || prev == afv1.VMPhaseBound || prev == afv1.VMPhaseReleased:
		return afv1.VMPhaseReleased, afv1.ReasonAgentUnbound
	case hostFailsValidations(a):
		return afv1.VMPhaseProvisioning, afv1.ReasonHostValidationsFailing
	}
	return afv1.VMPhaseAvailable, afv1.ReasonAgentPrepared
}

// unbindingPendingUserActionMessage explains the VM's state once its Agent awaits a reboot into discovery.
func unbindingPendingUserActionMessage(vm, agent, machine string) string {
	kept := "no Machine references it"
	if machine != "" {
		kept = "Machine " + machine + " no longer exists"
	}
	return fmt.Sprintf("Agent %s was unbound and awaits a reboot of its host into the discovery image "+
		"(UnbindingPendingUserAction): VM %s runs the installed OS of a removed worker and is not reused; "+
		"the pool destroys it once %s, and creates a replacement only if its demand needs one", agent, vm, kept)
}

// installingPendingUserActionMessage explains a bound VM whose host booted the discovery image again.
func installingPendingUserActionMessage(vm, agent, stateInfo string) string {
	if stateInfo == "" {
		stateInfo = "the host booted the discovery image instead of its installed disk"
	}
	return fmt.Sprintf("Agent %s is at installing-pending-user-action (%s): VM %s booted the discovery image again instead of "+
		"its installed disk, so its worker does not come up. Eject the ISO from the VM's CD-ROM (or set spec.iso.ejectAfterInstall "+
		"on the pool) or put the disk first in its boot order, then reset the VM", agent, stateInfo, vm)
}

// reservingMachine is the owner Machine of the AgentMachine the Agent's reservation names. The provider
// labels the Agent (agentMachineRef = the AgentMachine's name on current providers, its UID on older
// ones, with the agentMachineRefNamespace annotation) before it writes the AgentMachine's
// status.agentRef; finding that AgentMachine records the Machine in the same status write as Bound
// instead of a later one. Agent.ReservedBy decides which AgentMachine the label names: only the pool's
// control plane namespace is searched, a name counts only with the annotation naming that namespace, a
// UID also without it.
func (r *Reconciler) reservingMachine(ctx context.Context, s *vmScope) string {
	ns, annotated := s.agent.Obj.GetAnnotations()[agents.AnnotationAgentMachineRefNamespace]
	if s.agent.AgentMachineRef() == "" || (annotated && ns != s.pool.Spec.ControlPlaneNamespace) {
		return ""
	}
	list := agents.NewList(agents.AgentMachineGVK)
	if err := r.List(ctx, list, client.InNamespace(s.pool.Spec.ControlPlaneNamespace)); err != nil {
		return ""
	}
	for i := range list.Items {
		if am := agents.AgentMachineFrom(&list.Items[i]); s.agent.ReservedBy(am) {
			return am.OwnerMachine
		}
	}
	return ""
}

// hostFailsValidations is Agent.FailsValidations without the list: the same verdict checkValidations
// reports and acts on (Unknown while the validations run is not failing).
func hostFailsValidations(a agents.Agent) bool {
	_, fails := a.FailsValidations()
	return fails
}
