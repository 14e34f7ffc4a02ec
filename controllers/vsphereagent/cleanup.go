package vsphereagent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// reconcileDelete is the VsphereAgent's finalizer. A VM that still backs a Machine (fresh read) is kept;
// under Retain (or with the pool gone) the VM and Agent are kept; otherwise the Agent is unapproved
// (optimistic lock), the VM destroyed by instance UUID after its ownership is verified, and the Agent
// deleted (UID precondition) only once the VM is confirmed gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *vmScope) (ctrl.Result, error) {
	va := s.va
	if !controllerutil.ContainsFinalizer(va, afv1.FinalizerVsphereAgent) {
		return ctrl.Result{}, nil
	}
	// The pool's cleanupPolicy decides whether a VM is destroyed: read it fresh, never from a cache
	// that may not have seen the user's last change (e.g. Retain set just before the delete).
	pool, err := freshPool(ctx, r.APIReader, va)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.pool = pool
	if pool != nil && pool.Spec.Paused {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonPaused, "the pool is paused: cleanup waits", va.Generation)
		return ctrl.Result{}, nil
	}
	// A recorded ejection is finished first; one that fails, drags on or cannot be reached is closed
	// with an event: it never blocks deletion.
	if wait, err := r.ejector().FinishOrClose(ctx, r.ejectionPass(s)); err != nil || wait {
		return ctrl.Result{RequeueAfter: ejection.PollInterval}, err
	}
	r.checks.forget(va.UID)
	r.resets.forget(va.UID)
	r.Opts.NoVMYet.Forget(va.UID)
	r.setPhase(va, afv1.VMPhaseDeleting, afv1.ReasonDeleting)
	done := func(reason, msg string) (ctrl.Result, error) {
		if err := r.leases().Settle(ctx, va, pool, reason == afv1.ReasonCleanedUp); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(va, nil, "Normal", reason, events.ActionDestroyVM, "%s", msg)
		metrics.VMResources.DeletePartialMatch(map[string]string{metrics.LabelPoolNamespace: va.Namespace, "vm": va.Name})
		controllerutil.RemoveFinalizer(va, afv1.FinalizerVsphereAgent)
		return ctrl.Result{}, r.Update(ctx, va)
	}
	if pool == nil || pool.Spec.CleanupPolicy == afv1.CleanupPolicyRetain {
		return done(afv1.ReasonVMRetained, "VM "+va.Status.VM.Name+" and its Agent are kept (cleanupPolicy Retain or pool gone)")
	}

	agent, err := agents.FreshAgent(ctx, r.APIReader, va.Namespace, va.Status.VM.AgentName)
	if err != nil {
		return ctrl.Result{}, err
	}
	var mac, bios string
	if agent == nil {
		if mac, bios, err = r.vmIdentity(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		if agent, err = agents.FreshHostAgent(ctx, r.APIReader, va.Namespace, mac, bios); err != nil {
			return ctrl.Result{}, err
		}
	}
	agentName := ""
	if agent != nil {
		agentName = agent.Name
	}
	inUse, machine, err := agents.MachineReferencesAgent(ctx, r.APIReader, pool.Spec.ControlPlaneNamespace, agentName, va.Status.VM.MachineName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if inUse || (agent != nil && agent.IsBound()) {
		// A Machine that is being deleted will let its VM go soon: wait for it rather than retaining the VM
		// now, because once this VsphereAgent (and perhaps its pool) is gone nothing would destroy it.
		if deleting, err := machineDeleting(ctx, r.APIReader, pool.Spec.ControlPlaneNamespace, machine); err != nil {
			return ctrl.Result{}, err
		} else if deleting {
			if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionReady); c == nil || c.Reason != afv1.ReasonWaitingForMachineDeletion {
				r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonWaitingForMachineDeletion, events.ActionDestroyVM, "VM %s backs Machine %s, which is being deleted: destroyed once it is gone", va.Status.VM.Name, machine)
			}
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonWaitingForMachineDeletion,
				"VM "+va.Status.VM.Name+" backs Machine "+machine+", which is being deleted; the VM is destroyed once it is gone", va.Generation)
			return ctrl.Result{RequeueAfter: machineDeletionPoll}, nil
		}
		return done(afv1.ReasonVMRetainedInUse, "VM "+va.Status.VM.Name+" still backs Machine "+machine+"; kept running")
	}
	if agent != nil {
		if err := agents.Unapprove(ctx, r.Client, agent); err != nil {
			if errors.Is(err, agents.ErrReservationWon) {
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, err
		}
	}

	vs, err := r.client(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.leaveClusterModules(ctx, vs, va, pool); err != nil {
		return ctrl.Result{}, err
	}
	dc := poolspec.DatacenterOf(va, pool)
	// Destroy by instance UUID = our UID: also finds a VM whose status was never persisted.
	if err := vs.DestroyVM(ctx, dc, string(va.UID), poolspec.Ownership(va, pool)); err != nil {
		if vsphere.ClassOf(err) == vsphere.ClassOwnership {
			r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonDestroyRefused, events.ActionDestroyVM, "VM with instance UUID %s does not carry this VsphereAgent's ownership marker: not destroyed", va.UID)
			return done(afv1.ReasonVMNotOwned, "the VM is not ours; nothing destroyed")
		}
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonVMDestroyFailed, events.ActionDestroyVM, "destroying VM %s: %v", va.Status.VM.Name, err)
		return ctrl.Result{}, err
	}
	if _, err := vs.FindVM(ctx, dc, string(va.UID), ""); err == nil {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	} else if !vsphere.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err := crashpoint.Hit(ctx, crashpoint.VMDestroyed); err != nil {
		return ctrl.Result{}, err
	}
	vmName := cmp.Or(va.Status.VM.Name, va.Name) // a VM's name is its VsphereAgent's; the status may lack it
	r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonVMDestroyed, events.ActionDestroyVM, "destroyed VM %s", vmName)
	if agent == nil {
		// The VM's discovery agent may have registered between the look-up above and the destroy (a VM
		// released right after its creation): with the VM gone, an unbound Agent of its identity would be
		// left behind for good.
		if agent, err = lateAgent(ctx, r.APIReader, va.Namespace, mac, bios); err != nil {
			return ctrl.Result{}, err
		}
		if agent != nil {
			if err := agents.Unapprove(ctx, r.Client, agent); errors.Is(err, agents.ErrReservationWon) {
				agent = nil // the provider reserved it meanwhile: not ours to delete
			} else if err != nil {
				return ctrl.Result{}, err
			}
		} else {
			// Its registration may still be on its way (or its Agent not carry its inventory yet): the
			// pool deletes such an Agent when it shows up (poolmemory.LateRegistrationWindow).
			r.Opts.DestroyedHosts.Add(types.NamespacedName{Namespace: va.Namespace, Name: va.Spec.PoolRef.Name}, poolmemory.DestroyedHost{
				VM: vmName, VsphereAgent: va.Name, MAC: mac, BIOSUUID: bios, At: r.Opts.Clock.Now(),
			})
		}
	}
	if agent != nil {
		if err := agents.DeleteAgent(ctx, r.Client, agent); err != nil {
			return ctrl.Result{}, err
		}
		if err := crashpoint.Hit(ctx, crashpoint.AgentDeleted); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonAgentDeleted, events.ActionDeleteAgent, "deleted Agent %s", agent.Name)
	}
	return done(afv1.ReasonCleanedUp, "VM and Agent removed")
}

// vmIdentity is the VM's MAC and BIOS UUID to find its Agent by: from the status, or, when the status
// was never written (the VsphereAgent was deleted while vCenter created its VM, and that pass's status
// write lost to the deletion), from the VM itself, found by instance UUID and proven ours by its marker.
func (r *Reconciler) vmIdentity(ctx context.Context, s *vmScope) (mac, bios string, err error) {
	va := s.va
	if va.Status.VM.MACAddress != "" {
		return va.Status.VM.MACAddress, va.Status.VM.BIOSUUID, nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return "", "", err
	}
	info, err := vs.FindVM(ctx, poolspec.DatacenterOf(va, s.pool), string(va.UID), "")
	if err != nil {
		if vsphere.IsNotFound(err) {
			return "", "", nil
		}
		return "", "", err
	}
	if info.Ownership.OwnerUID != string(va.UID) {
		return "", "", nil
	}
	return agents.NormalizeMAC(info.MACAddress), info.BIOSUUID, nil
}

// lateAgent is the unbound Agent of a destroyed VM's identity that registered while it was destroyed.
func lateAgent(ctx context.Context, reader client.Reader, namespace, mac, bios string) (*agents.Agent, error) {
	agent, err := agents.FreshHostAgent(ctx, reader, namespace, mac, bios)
	if err != nil || agent == nil || agent.IsBound() {
		return nil, err
	}
	return agent, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// machineDeletionPoll is how often a deletion waiting for a Machine checks again (Machine events do not
// reach a VsphereAgent that no longer tracks a binding).
const machineDeletionPoll = 10 * time.Second

// machineDeleting reports whether Machine name exists and is being deleted (read live).
func machineDeleting(ctx context.Context, reader client.Reader, namespace, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	m := agents.New(agents.MachineGVK())
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, m); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return m.GetDeletionTimestamp() != nil, nil
}

// freshPool reads a VsphereAgent's pool from the API server (nil when it is gone).
func freshPool(ctx context.Context, reader client.Reader, va *afv1.VsphereAgent) (*afv1.VsphereAgentPool, error) {
	pool := &afv1.VsphereAgentPool{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: va.Namespace, Name: va.Spec.PoolRef.Name}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return pool, nil
}
