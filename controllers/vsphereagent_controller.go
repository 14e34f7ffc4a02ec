package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagents,verbs=list;watch;update
// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagents/status,verbs=update
// +kubebuilder:rbac:groups=agent-install.openshift.io,resources=agents,verbs=get;list;watch;patch;delete

// statusConflictRequeue is how soon a VsphereAgent is looked at again after its status write met a
// conflict (a newer object arrived), when the pass asked for no requeue of its own. The newer object's
// watch event normally triggers the next pass first; this is the fallback. (It replaces
// ctrl.Result{Requeue: true}, deprecated by controller-runtime, which waited the VM rate limiter's backoff:
// 5 ms plus jitter, doubling with each consecutive retry of the object.)
const statusConflictRequeue = 100 * time.Millisecond

// VsphereAgentReconciler runs one VM's lifecycle: create (crash-safe), match and prepare its Agent,
// follow binding, enforce registration liveness, and clean up on deletion.
type VsphereAgentReconciler struct {
	client.Client
	APIReader client.Reader
	Recorder  record.EventRecorder
	Opts      Options
	// Guard refuses ejections while the served CRD would prune the recovery record.
	Guard *crdGuard
	// refusals remembers VsphereAgents failed by a permanent create refusal until the cache shows it.
	refusals refusalMemory
	// own lets a pass see this controller's last write of its VsphereAgent while the cache still lags
	// (else it would create the VM again and write the same status with a stale resourceVersion).
	own *ownWrites[*afv1.VsphereAgent]
	// ejectTasks remembers, by VsphereAgent UID, a reconfigure seen once and not yet written into the
	// ejection record (see stepEjection).
	ejectTasks sync.Map
}

// vmScope is what one pass of a VsphereAgent observed.
type vmScope struct {
	va      *afv1.VsphereAgent
	pool    *afv1.VsphereAgentPool
	log     logr.Logger
	agent   *agents.Agent
	vs      vsphere.Client
	requeue time.Duration
	// afterWrite runs once this pass's status is persisted (or needed no write): outcomes a stale pass
	// could repeat (an ejection seen done again) are counted and announced only then.
	afterWrite []func()
}

func (s *vmScope) requeueAfter(d time.Duration) {
	if d > 0 && (s.requeue == 0 || d < s.requeue) {
		s.requeue = d
	}
}

// Reconcile runs the VM's phases and patches status once, only if it changed.
func (r *VsphereAgentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	ctx = r.Opts.withCrashPoint(ctx, req.NamespacedName)
	start := r.Opts.Clock.Now()
	va := &afv1.VsphereAgent{}
	if err := r.Get(ctx, req.NamespacedName, va); err != nil {
		if apierrors.IsNotFound(err) {
			r.own.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	va = r.own.latest(va)
	s := &vmScope{va: va, log: ctrl.LoggerFrom(ctx)}
	before := va.Status.DeepCopy()
	defer func() {
		stampTransitions(before.Conditions, va.Status.Conditions, r.Opts.Clock.Now())
		wrote, conflict := true, false
		if !sameAsStored(before, &va.Status) && (va.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(va, afv1.FinalizerVsphereAgent)) {
			replaced := va.ResourceVersion
			err := r.Status().Update(ctx, va)
			wrote = err == nil
			if wrote {
				r.own.wrote(replaced, va)
			}
			if apierrors.IsConflict(err) {
				res, conflict = ctrl.Result{}, true // a newer object arrived: the next pass sees it
			} else if err != nil && !apierrors.IsNotFound(err) {
				retErr = errors.Join(retErr, err)
			}
		}
		if wrote {
			for _, f := range s.afterWrite {
				f()
			}
		}
		result := "success"
		if retErr != nil {
			result = "error"
		}
		metrics.ReconcileDuration.WithLabelValues("vsphereagent", result).Observe(r.Opts.Clock.Since(start).Seconds())
		if retErr == nil && res.RequeueAfter == 0 {
			res.RequeueAfter = s.requeue
			if res.RequeueAfter == 0 && conflict {
				res.RequeueAfter = statusConflictRequeue
			}
		}
	}()

	pool := &afv1.VsphereAgentPool{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: va.Namespace, Name: va.Spec.PoolRef.Name}, pool); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		pool = nil
	}
	s.pool = pool

	// The pass's work ends at VMPassTimeout (a hung vCenter call); its status is written with ctx.
	work, cancel := context.WithTimeout(ctx, r.Opts.VMPassTimeout)
	defer cancel()
	if !va.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(work, s)
	}
	if pool == nil {
		setCondition(&va.Status.Conditions, afv1.ConditionReady, false, ReasonPoolNotFound, "VsphereAgentPool "+va.Spec.PoolRef.Name+" not found", va.Generation)
		return ctrl.Result{}, nil
	}
	if !createdByPool(va, pool) {
		r.refuseForeignVsphereAgent(va, pool)
		return ctrl.Result{}, nil
	}
	if controllerutil.AddFinalizer(va, afv1.FinalizerVsphereAgent) {
		replaced := va.ResourceVersion
		if err := r.Update(ctx, va); err != nil {
			return ctrl.Result{}, err
		}
		r.own.wrote(replaced, va)
	}
	if pool.Spec.Paused {
		setCondition(&va.Status.Conditions, afv1.ConditionReady, false, ReasonPaused, "the pool is paused", va.Generation)
		return ctrl.Result{}, nil
	}
	if va.Status.VM.Phase == afv1.VMPhaseFailed {
		return ctrl.Result{}, nil // the pool replaces it and deletes it later
	}

	for _, phase := range []func(context.Context, *vmScope) (bool, error){
		r.ensureVM, r.matchAgent, r.prepareAgent, r.trackBinding, r.reportImage, r.checkLiveness, r.ejectISO,
	} {
		cont, err := phase(work, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !cont {
			break
		}
	}
	va.Status.ObservedGeneration = va.Generation
	r.setReady(s)
	return ctrl.Result{}, nil
}

// setPhase moves the VM to a phase, stamping the transition time only on change.
func (r *VsphereAgentReconciler) setPhase(va *afv1.VsphereAgent, phase afv1.VMPhase, reason string) {
	if va.Status.VM.Phase == phase && va.Status.VM.Reason == reason {
		return
	}
	now := metav1.NewTime(r.Opts.Clock.Now())
	if va.Status.VM.Phase != phase {
		va.Status.VM.LastTransitionTime = &now
	}
	va.Status.VM.Phase, va.Status.VM.Reason = phase, reason
}

func (r *VsphereAgentReconciler) client(ctx context.Context, s *vmScope) (vsphere.Client, error) {
	if s.vs != nil {
		return s.vs, nil
	}
	if s.pool == nil {
		return nil, fmt.Errorf("VsphereAgentPool %s is gone: no credentials to reach vCenter", s.va.Spec.PoolRef.Name)
	}
	creds, err := loadCredentials(ctx, r.APIReader, s.pool, r.Opts.AllowCrossNamespaceSecrets)
	if err != nil {
		return nil, err
	}
	vs, err := r.Opts.Sessions.Get(ctx, creds)
	if err != nil {
		return nil, err
	}
	s.vs = vs
	return vs, nil
}

func ownership(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) vsphere.Ownership {
	o := vsphere.Ownership{OwnerUID: string(va.UID), OwnerName: va.Namespace + "/" + va.Name}
	if pool != nil {
		o.PoolUID, o.PoolName = string(pool.UID), pool.Namespace+"/"+pool.Name
	}
	return o
}

func datacenterOf(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) string {
	if va.Status.VM.Datacenter != "" {
		return va.Status.VM.Datacenter
	}
	return pool.Spec.VSphere.Datacenter
}

// ensureVM creates the VM once. Crash-safe: the instance UUID is this object's UID, so a retry after a
// crash between "created" and "status written" finds the VM instead of creating a second one.
func (r *VsphereAgentReconciler) ensureVM(ctx context.Context, s *vmScope) (bool, error) {
	va, pool := s.va, s.pool
	if va.Status.VM.InstanceUUID != "" && va.Status.VM.MACAddress != "" {
		return true, nil
	}
	if r.refusals.reapply(r, va) { // a stale read of a VsphereAgent already failed: never create again
		return false, nil
	}
	if pool.Status.ISO == nil || pool.Status.ISO.Path == "" {
		r.setPhase(va, afv1.VMPhasePending, ReasonWaitingForISO)
		setCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, ReasonWaitingForISO, "the pool's discovery ISO is not cached yet", va.Generation)
		return false, nil
	}
	mac, ready, err := r.staticIPLease(ctx, s)
	if err != nil || !ready {
		return false, err
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		r.setPhase(va, afv1.VMPhasePending, ReasonWaitingForCredentials)
		setCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, vsphereReason(err), err.Error(), va.Generation)
		return r.createFailed(ctx, s, nil, va.Name, err, false)
	}
	if _, ok := domainOf(pool, va.Spec.FailureDomain); !ok {
		// The domain was removed from the pool before the VM was created: the pool releases this one.
		r.setPhase(va, afv1.VMPhasePending, ReasonFailureDomainNotFound)
		setCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, ReasonFailureDomainNotFound,
			"failure domain "+va.Spec.FailureDomain+" is no longer in the pool's spec.vsphere.failureDomains; no VM is created", va.Generation)
		return false, nil
	}
	spec := vmSpec(va, pool)
	spec.MACAddress = mac
	info, err := vs.CreateVM(ctx, spec)
	if err != nil {
		return r.createFailed(ctx, s, vs, spec.Name, err, true)
	}
	if err := crashpoint.Hit(ctx, crashpoint.VMPoweredOn); err != nil {
		return false, err
	}
	now := metav1.NewTime(r.Opts.Clock.Now())
	va.Status.VM.Name, va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID = info.Name, info.InstanceUUID, info.BIOSUUID
	va.Status.VM.MACAddress = agents.NormalizeMAC(info.MACAddress)
	va.Status.VM.Datacenter, va.Status.VM.ISOPath = spec.Datacenter, spec.ISOPath
	va.Status.VM.Hardware = hardwareStatus(spec.Hardware, info)
	if t := pool.Status.ISO.SourceCreatedTime; t != nil && va.Status.VM.ImageCreatedTime == nil {
		va.Status.VM.ImageCreatedTime = t.DeepCopy()
	}
	if va.Status.VM.CreatedAt == nil {
		va.Status.VM.CreatedAt = &now
	}
	r.setPhase(va, afv1.VMPhaseProvisioning, ReasonAwaitingRegistration)
	setCondition(&va.Status.Conditions, afv1.ConditionVMCreated, true, ReasonVMCreated, "VM "+info.Name+" is powered on", va.Generation)
	if info.Adopted {
		r.Recorder.Eventf(va, "Normal", "VMAdopted", "found VM %s (instance UUID %s) from an earlier attempt; adopted it instead of creating another", info.Name, info.InstanceUUID)
	} else {
		r.Recorder.Eventf(va, "Normal", "VMCreated", "created and powered on VM %s (instance UUID %s)", info.Name, info.InstanceUUID)
	}
	return true, nil
}

// vmSpec renders the pool's template for this VM.
func vmSpec(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) vsphere.VMSpec {
	v, t := pool.Spec.VSphere, pool.Spec.Template
	pl, _ := domainOf(pool, va.Spec.FailureDomain) // ensureVM checked it exists
	return vsphere.VMSpec{
		Name: va.Name, Datacenter: v.Datacenter, DatastoreCluster: pl.DatastoreCluster, ResourcePool: pl.ResourcePool,
		Folder: pl.Folder, Network: pl.Network, Tags: v.VMTags, GuestID: v.GuestID, SCSIType: v.SCSIType, Firmware: v.Firmware,
		NetworkAdapter: v.NetworkAdapterType, NumCPUs: t.NumCPUs, MemoryMiB: t.MemoryMiB, DiskGiB: t.DiskGiB,
		EagerlyScrub: v.DiskEagerlyScrub, ISOPath: pool.Status.ISO.Path, Ownership: ownership(va, pool),
		Hardware: hardwareOf(pool),
	}
}

// matchAgent finds the Agent the VM registered: by the NIC MAC we gave it, then by the BIOS-UUID serial.
func (r *VsphereAgentReconciler) matchAgent(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	var found []agents.Agent
	queries := []client.MatchingFields{}
	if mac := va.Status.VM.MACAddress; mac != "" {
		queries = append(queries, client.MatchingFields{indexAgentMAC: mac})
	}
	if serial := agents.NormalizeUUID(va.Status.VM.BIOSUUID); serial != "" {
		queries = append(queries, client.MatchingFields{indexAgentSerial: serial})
	}
	for _, q := range queries {
		list := agents.NewList(agents.AgentGVK)
		if err := r.List(ctx, list, client.InNamespace(va.Namespace), q); err != nil {
			return false, err
		}
		for i := range list.Items {
			a := agents.AgentFrom(&list.Items[i])
			if a.Deleting {
				continue
			}
			// By MAC, the serial must agree; by serial, it is the key itself.
			if _, byMAC := q[indexAgentMAC]; byMAC && !a.IsHostOf(va.Status.VM.MACAddress, va.Status.VM.BIOSUUID) {
				continue
			}
			found = append(found, a)
		}
		if len(found) > 0 {
			break
		}
	}
	if len(found) == 0 {
		if va.Status.VM.AgentName != "" {
			setCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, ReasonAgentMissing, "Agent "+va.Status.VM.AgentName+" no longer exists", va.Generation)
		} else {
			setCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, ReasonAwaitingRegistration, "waiting for the VM to boot the discovery ISO and register", va.Generation)
		}
		return true, nil
	}
	sort.Slice(found, func(i, j int) bool {
		return found[i].Obj.GetCreationTimestamp().After(found[j].Obj.GetCreationTimestamp().Time)
	})
	a := found[0]
	s.agent = &a
	va.Status.VM.AgentName = a.Name // shown by the AgentRegistered condition; no Event (one API write per VM)
	setCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, true, ReasonAgentRegistered, "registered as Agent "+a.Name, va.Generation)
	return true, nil
}

// prepareAgent makes a free Agent bindable: pool labels, role label and spec.role, hostname = VM name,
// approved when the pool says so. Bound Agents, Agents leaving a cluster (unbinding, reclaiming,
// awaiting a reboot into discovery) and released VMs' Agents are never touched.
func (r *VsphereAgentReconciler) prepareAgent(ctx context.Context, s *vmScope) (bool, error) {
	a, va, pool := s.agent, s.va, s.pool
	if a == nil || a.IsBound() || a.IsUnbinding() || va.Status.VM.Phase == afv1.VMPhaseReleased {
		return true, nil
	}
	role := pool.Spec.Agent.Role
	if role == "" {
		role = "worker"
	}
	wantLabels := map[string]string{afv1.LabelNodePoolRole: role, afv1.LabelPool: pool.Name, afv1.LabelVsphereAgent: va.Name}
	for k, v := range pool.Spec.Agent.LabelSet() {
		wantLabels[k] = v
	}
	topology := topologyLabels(pool, va.Spec.FailureDomain)
	for k, v := range topology {
		wantLabels[k] = v
	}
	approve := pool.Spec.Agent.Approve == nil || *pool.Spec.Agent.Approve
	patch := map[string]any{}
	labels := map[string]any{}
	for k, v := range wantLabels {
		if a.Labels[k] != v {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		patch["metadata"] = map[string]any{"labels": labels}
	}
	spec := map[string]any{}
	if a.Role != role {
		spec["role"] = role
	}
	if a.Hostname != va.Status.VM.Name {
		spec["hostname"] = va.Status.VM.Name
	}
	if approve && !a.Approved {
		spec["approved"] = true
	}
	if nodeLabels := missingNodeLabels(a, topology); len(nodeLabels) > 0 {
		spec["nodeLabels"] = nodeLabels // merged: the Agent's other node labels stay
	}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	if len(patch) > 0 {
		obj := agents.New(agents.AgentGVK)
		obj.SetNamespace(a.Namespace)
		obj.SetName(a.Name)
		if err := r.Patch(ctx, obj, client.RawPatch(types.MergePatchType, mustJSON(patch))); err != nil {
			return false, fmt.Errorf("preparing Agent %s: %w", a.Name, err)
		}
		if err := crashpoint.Hit(ctx, crashpoint.AgentPatched); err != nil {
			return false, err
		}
		// No Event: the AgentPrepared condition says it, and an Event per VM is an API write per VM
		// (Events are for creations, deletions, ejections and refusals).
	}
	setCondition(&va.Status.Conditions, afv1.ConditionAgentPrepared, true, ReasonAgentPrepared,
		fmt.Sprintf("Agent %s carries the pool's labels, hostname %s and role %s (approved: %t)", a.Name, va.Status.VM.Name, role, approve || a.Approved), va.Generation)
	return true, nil
}

// trackBinding follows the Agent CAPI provider: Available → Bound (with the Machine) → Released.
func (r *VsphereAgentReconciler) trackBinding(ctx context.Context, s *vmScope) (bool, error) {
	va, a := s.va, s.agent
	if a == nil {
		if va.Status.VM.AgentName == "" {
			r.setPhase(va, afv1.VMPhaseProvisioning, ReasonAwaitingRegistration)
			return true, nil
		}
		// The Agent vanished: never destroy a VM whose Machine still exists.
		if va.Status.VM.MachineName != "" {
			m := agents.New(agents.MachineGVK())
			err := r.Get(ctx, types.NamespacedName{Namespace: s.pool.Spec.ControlPlaneNamespace, Name: va.Status.VM.MachineName}, m)
			if err == nil {
				r.setPhase(va, afv1.VMPhaseBound, ReasonAgentMissing)
				s.requeueAfter(time.Minute)
				return true, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		r.setPhase(va, afv1.VMPhaseReleased, ReasonAgentMissing)
		return true, nil
	}
	phase, reason := bindingPhase(va.Status.VM.Phase, *a)
	if phase == afv1.VMPhaseBound {
		machine := ""
		list := agents.NewList(agents.AgentMachineGVK)
		if err := r.List(ctx, list, client.InNamespace(s.pool.Spec.ControlPlaneNamespace), client.MatchingFields{indexAgentMachineRef: a.Name}); err != nil {
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
	if reason == ReasonUnbindingPendingUserAction && va.Status.VM.Reason != reason {
		// Once, when the status saying so is written (a conflicting write is retried by a pass that
		// sees the old reason again).
		name, agent, machine := va.Status.VM.Name, a.Name, va.Status.VM.MachineName
		s.afterWrite = append(s.afterWrite, func() {
			r.Recorder.Eventf(va, "Warning", ReasonUnbindingPendingUserAction, "%s", unbindingPendingUserActionMessage(name, agent, machine))
		})
	}
	r.setPhase(va, phase, reason)
	return true, nil
}

// bindingPhase decides the VM's phase from its registered Agent and the phase the VM had (the Agent
// vanishing is trackBinding's). First match wins:
//  1. the Agent is reserved or bound (label, Bound=True or a cluster deployment): Bound/AgentBound;
//  2. it awaits a reboot into discovery (unbinding-pending-user-action: the provider unbound an installed
//     host and assisted-service did not reclaim it): Released/UnbindingPendingUserAction, whatever the
//     phase was: the VM runs the installed OS of a worker that is gone, it is never capacity again;
//  3. it is on its way out of a cluster otherwise (unbinding, reclaiming, reclaiming-rebooting), or the
//     VM was Bound or Released before: Released/AgentUnbound (unbound after use);
//  4. otherwise: Available/AgentPrepared.
//
// Released is never supply (planner.Lifecycle); the pool removes a Released VM only once a fresh read
// shows its Agent unbound and no Machine referencing it (release, reconcileDelete).
func bindingPhase(prev afv1.VMPhase, a agents.Agent) (afv1.VMPhase, string) {
	switch {
	case a.IsBound():
		return afv1.VMPhaseBound, ReasonAgentBound
	case a.AwaitsRebootIntoDiscovery():
		return afv1.VMPhaseReleased, ReasonUnbindingPendingUserAction
	case a.IsUnbinding() || prev == afv1.VMPhaseBound || prev == afv1.VMPhaseReleased:
		return afv1.VMPhaseReleased, ReasonAgentUnbound
	}
	return afv1.VMPhaseAvailable, ReasonAgentPrepared
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

// reservingMachine is the owner Machine of the AgentMachine the Agent's reservation names. The provider
// labels the Agent (agentMachineRef = the AgentMachine's name on current providers, its UID on older
// ones, with the agentMachineRefNamespace annotation) before it writes the AgentMachine's
// status.agentRef; finding that AgentMachine records the Machine in the same status write as Bound
// instead of a later one. Agent.ReservedBy decides which AgentMachine the label names: only the pool's
// control plane namespace is searched, a name counts only with the annotation naming that namespace, a
// UID also without it.
func (r *VsphereAgentReconciler) reservingMachine(ctx context.Context, s *vmScope) string {
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

// checkLiveness replaces a VM whose Agent has not registered within registrationTimeout.
func (r *VsphereAgentReconciler) checkLiveness(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	if s.agent != nil || va.Status.VM.AgentName != "" || va.Status.VM.CreatedAt == nil {
		return true, nil
	}
	timeout := 20 * time.Minute
	if s.pool.Spec.RegistrationTimeout != nil {
		timeout = s.pool.Spec.RegistrationTimeout.Duration
	}
	left := va.Status.VM.CreatedAt.Add(timeout).Sub(r.Opts.Clock.Now())
	if left > 0 {
		s.requeueAfter(left)
		return true, nil
	}
	// The cache may not have seen a registration of the last moments: confirm with a fresh read
	// before destroying; the Agent's event brings the next reconcile.
	if agent, err := freshAgentByMAC(ctx, r.APIReader, va.Namespace, va.Status.VM.MACAddress, va.Status.VM.BIOSUUID); err != nil {
		return false, err
	} else if agent != nil && !agent.Deleting {
		s.requeueAfter(time.Second)
		return true, nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return false, err
	}
	if err := vs.DestroyVM(ctx, datacenterOf(va, s.pool), string(va.UID), ownership(va, s.pool)); err != nil {
		r.Recorder.Eventf(va, "Warning", "VMDestroyFailed", "destroying unregistered VM %s: %v", va.Status.VM.Name, err)
		return false, err
	}
	r.Recorder.Eventf(va, "Warning", ReasonRegistrationTimeout, "VM %s registered no Agent within %s; destroyed, the pool replaces it", va.Status.VM.Name, timeout)
	r.setPhase(va, afv1.VMPhaseFailed, ReasonRegistrationTimeout)
	setCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, ReasonRegistrationTimeout,
		fmt.Sprintf("no Agent registered within %s", timeout), va.Generation)
	return false, nil
}

// setReady rolls the VM's state up into Ready.
func (r *VsphereAgentReconciler) setReady(s *vmScope) {
	va := s.va
	switch va.Status.VM.Phase {
	case afv1.VMPhaseAvailable, afv1.VMPhaseBound:
		setCondition(&va.Status.Conditions, afv1.ConditionReady, true, string(va.Status.VM.Phase), "VM "+va.Status.VM.Name+" is "+string(va.Status.VM.Phase), va.Generation)
	default:
		msg := "VM phase " + string(va.Status.VM.Phase)
		if va.Status.VM.Reason == ReasonUnbindingPendingUserAction {
			msg = unbindingPendingUserActionMessage(va.Status.VM.Name, va.Status.VM.AgentName, va.Status.VM.MachineName)
		}
		setCondition(&va.Status.Conditions, afv1.ConditionReady, false, va.Status.VM.Reason, msg, va.Generation)
	}
}
