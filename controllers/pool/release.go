package pool

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/watch"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/finalizers"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// release removes one surplus VM: a fresh read proves its Agent is free and no Machine references it;
// the Agent is unapproved with an optimistic lock (a concurrent reservation wins and the VM is kept);
// then the VsphereAgent is deleted and its finalizer destroys the VM and deletes the Agent. released
// reports whether the VsphereAgent was deleted (false: kept, or already going); why is the plan's reason,
// told in the VMReleased Event.
func (r *Reconciler) release(ctx context.Context, s *poolScope, poolKey, name, why string) (released bool, err error) {
	va := s.vsphereAgent(name)
	if va == nil || !va.DeletionTimestamp.IsZero() {
		return false, nil
	}
	agent, err := agents.FreshAgentOfVM(ctx, r.APIReader, va)
	if err != nil {
		return false, err
	}
	if agent != nil {
		if agent.IsBound() {
			r.Recorder.Eventf(s.pool, va, "Normal", afv1.ReasonSurplusKept, events.ActionReleaseVM, "VM %s kept: its Agent %s is bound", va.Name, agent.Name)
			return false, nil
		}
		inUse, machine, err := agents.MachineReferencesAgent(ctx, r.APIReader, s.pool.Spec.ControlPlaneNamespace, agent.Name, va.Status.VM.MachineName)
		if err != nil {
			return false, err
		}
		if inUse {
			r.Recorder.Eventf(s.pool, va, "Normal", afv1.ReasonSurplusKept, events.ActionReleaseVM, "VM %s kept: Machine %s references its Agent", va.Name, machine)
			return false, nil
		}
		if r.Opts.BeforeUnapprove != nil {
			r.Opts.BeforeUnapprove(ctx, agent.Namespace, agent.Name)
		}
		if err := agents.Unapprove(ctx, r.Client, agent); err != nil {
			if errors.Is(err, agents.ErrReservationWon) {
				r.Recorder.Eventf(s.pool, va, "Normal", afv1.ReasonSurplusKept, events.ActionReleaseVM, "VM %s kept: its Agent %s changed while being released (a reservation wins)", va.Name, agent.Name)
				s.requeueAfter(time.Second)
				return false, nil
			}
			return false, err
		}
	}
	uid := va.UID
	if err := r.Delete(ctx, va, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return false, err
	}
	r.expectations.expectDelete(poolKey, va.Name)
	metrics.VMsRequested.WithLabelValues(s.pool.Namespace, s.pool.Name, "release").Inc()
	r.Recorder.Eventf(s.pool, va, "Normal", afv1.ReasonVMReleased, events.ActionReleaseVM, "releasing VM %s: %s", va.Name, why)
	return true, nil
}

// scanOrphans periodically lists the pool's VMs in vCenter (by our ownership marker) and finds those
// with no VsphereAgent: reported always, cleaned under Delete when no Machine uses them. A VM with the
// marker that is not the VM its owner made is a copy (reportCopies), never an orphan.
func (r *Reconciler) scanOrphans(ctx context.Context, s *poolScope) error {
	if s.vs == nil || !r.orphanScans.due(client.ObjectKeyFromObject(s.pool), s.pool.UID, r.Opts.Clock.Now(), r.Opts.OrphanScanInterval) {
		return nil
	}
	s.requeueAfter(r.Opts.OrphanScanInterval)
	dc := s.pool.Spec.VSphere.Datacenter
	marked, err := r.markedVMs.list(ctx, listingKey(s.creds.Server, s.creds.Username, dc), r.Opts.Clock.Now(), orphanListingMaxAge(r.Opts.OrphanScanInterval),
		func(ctx context.Context) ([]vsphere.VMInfo, error) { return s.vs.ListMarkedVMs(ctx, dc) })
	if err != nil {
		return err
	}
	known := sets.New[string]()
	for _, va := range s.vas {
		known.Insert(string(va.UID))
	}
	var list afv1.VsphereAgentList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(s.pool.Namespace)); err != nil {
		return err
	}
	for _, va := range list.Items {
		known.Insert(string(va.UID))
	}
	// Copies carry the marker too (clones keep extraConfig): they are reported, never cleaned. Other
	// pools' VMs in the shared listing are left out here.
	originals, copies := splitCopies(marked, string(s.pool.UID))
	r.reportCopies(s, copies)
	for _, vm := range originals {
		if known.Has(vm.Ownership.OwnerUID) {
			continue
		}
		// The listing may be a minute old (shared): read the VM again, so one its VsphereAgent destroyed
		// since is not taken for an orphan, and the rest works from its current MAC and power state.
		fresh, err := s.vs.FindVM(ctx, dc, vm.InstanceUUID, "")
		if vsphere.ClassOf(err) == vsphere.ClassNotFound {
			continue
		}
		if err == nil && (fresh.Ownership != vm.Ownership || fresh.IsCopy()) {
			continue // no longer the VM the listing saw: the next scan looks again
		}
		if err == nil {
			err = r.cleanOrphan(ctx, s, *fresh)
		}
		if err != nil {
			r.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonOrphanCleanupFailed, events.ActionCleanUpOrphan, "orphan VM %s: %v", vm.Name, err)
		}
	}
	return nil
}

func (r *Reconciler) cleanOrphan(ctx context.Context, s *poolScope, vm vsphere.VMInfo) error {
	if s.pool.Spec.CleanupPolicy == afv1.CleanupPolicyRetain {
		r.Recorder.Eventf(s.pool, nil, "Warning", afv1.ReasonOrphanFound, events.ActionCleanUpOrphan, "VM %s carries this pool's marker but has no VsphereAgent; cleanupPolicy Retain keeps it", vm.Name)
		return nil
	}
	// Any Agent that may be the VM's host keeps the VM while it is bound or backs a Machine; only the
	// proven host's Agent (MAC and serial) is unapproved and deleted with the VM: a stranger's Agent that
	// shares the MAC is neither trusted to release the VM nor removed with it.
	candidates, err := agents.FreshAgentsByMAC(ctx, r.APIReader, s.pool.Namespace, vm.MACAddress, vm.BIOSUUID)
	if err != nil {
		return err
	}
	var agent *agents.Agent
	for i := range candidates {
		a := &candidates[i]
		inUse, _, err := agents.MachineReferencesAgent(ctx, r.APIReader, s.pool.Spec.ControlPlaneNamespace, a.Name, "")
		if err != nil {
			return err
		}
		if a.IsBound() || inUse {
			r.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonOrphanKept, events.ActionCleanUpOrphan, "VM %s has no VsphereAgent but its Agent %s backs a Machine; kept", vm.Name, a.Name)
			return nil
		}
		if agent == nil && a.IsHostOf(vm.MACAddress, vm.BIOSUUID) {
			agent = a
		}
	}
	if agent != nil {
		if err := agents.Unapprove(ctx, r.Client, agent); err != nil {
			return err
		}
	}
	if err := s.vs.DestroyVM(ctx, s.pool.Spec.VSphere.Datacenter, vm.InstanceUUID, vm.Ownership); err != nil {
		return err
	}
	if agent != nil {
		if err := agents.DeleteAgent(ctx, r.Client, agent); err != nil {
			return err
		}
	}
	r.Recorder.Eventf(s.pool, nil, "Normal", afv1.ReasonOrphanDestroyed, events.ActionCleanUpOrphan, "destroyed orphan VM %s (no VsphereAgent)", vm.Name)
	return nil
}

// reconcileDelete: Retain keeps every VM and Agent (the VsphereAgents let go of them); Delete releases
// every VsphereAgent, whose finalizers destroy unbound VMs and keep the ones that still back a Machine.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *poolScope) (ctrl.Result, error) {
	pool := s.pool
	if pool.Spec.Paused {
		r.Recorder.Eventf(pool, nil, "Warning", afv1.ReasonDeletionPaused, events.ActionDeletePool, "pool is paused: its VMs are not cleaned up until spec.paused is false")
		return ctrl.Result{}, nil
	}
	var vas afv1.VsphereAgentList
	if err := r.List(ctx, &vas, client.InNamespace(pool.Namespace), client.MatchingFields{watch.IndexPoolRef: pool.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range vas.Items {
		va := &vas.Items[i]
		if pool.Spec.CleanupPolicy == afv1.CleanupPolicyRetain {
			if va.Annotations[annotationRetained] != "true" || controllerutil.ContainsFinalizer(va, afv1.FinalizerVsphereAgent) {
				if va.Annotations == nil {
					va.Annotations = map[string]string{}
				}
				va.Annotations[annotationRetained] = "true"
				controllerutil.RemoveFinalizer(va, afv1.FinalizerVsphereAgent)
				if err := r.Update(ctx, va); client.IgnoreNotFound(err) != nil {
					return ctrl.Result{}, err
				}
			}
			continue
		}
		if va.DeletionTimestamp.IsZero() {
			uid := va.UID
			if err := r.Delete(ctx, va, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if pool.Spec.CleanupPolicy != afv1.CleanupPolicyRetain && len(vas.Items) > 0 {
		// The VsphereAgents' finalizers run; their deletion events bring us back.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if err := r.leases().ReleaseAll(ctx, s.pool); err != nil {
		return ctrl.Result{}, err
	}
	if !r.deleteModulesAtDeletion(ctx, s) { // the VMs left their modules as they went; now the modules go
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	kept := r.copiesAtDeletion(ctx, s)
	r.Recorder.Eventf(pool, nil, "Normal", afv1.ReasonPoolDeleted, events.ActionDeletePool, "cleanupPolicy %s applied to %d VM(s)%s", policyOf(pool), len(vas.Items), kept)
	r.expectations.forget(client.ObjectKeyFromObject(pool).String())
	r.copies.ForgetPool(client.ObjectKeyFromObject(pool))
	_, err := finalizers.Patch(ctx, r.Client, pool, afv1.FinalizerPool, false)
	return ctrl.Result{}, client.IgnoreNotFound(err)
}

// annotationRetained marks a VsphereAgent whose VM is kept when its pool is deleted under Retain.
const annotationRetained = "agent-forge.containeroo.ch/retained"

func policyOf(pool *afv1.VsphereAgentPool) afv1.CleanupPolicy {
	if pool.Spec.CleanupPolicy == "" {
		return afv1.CleanupPolicyDelete
	}
	return pool.Spec.CleanupPolicy
}
