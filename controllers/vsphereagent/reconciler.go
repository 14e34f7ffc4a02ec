package vsphereagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/config"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/controllers/staticip"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/crashpoint"
	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/exclusion"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/poolmemory"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/upstream"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagents,verbs=list;watch;update
// +kubebuilder:rbac:groups=agent-forge.containeroo.ch,resources=vsphereagents/status,verbs=update
// +kubebuilder:rbac:groups=agent-install.openshift.io,resources=agents,verbs=get;list;watch;patch;delete

// Reconciler runs one VM's lifecycle: create (crash-safe), match and prepare its Agent,
// follow binding, enforce registration liveness, and clean up on deletion.
type Reconciler struct {
	client.Client
	APIReader client.Reader
	Recorder  *events.Recorder
	Opts      config.Options
	// Guard refuses ejections while the served CRD would prune the recovery record.
	Guard *ejection.Guard
	// Exclusion closes every pass while another agent-forge manager is active (nil: never).
	Exclusion *exclusion.Watcher
	// Memory is the process's registry of per-pool records, shared with the pool controller, which calls
	// its Forget once a pool is gone; this controller's per-pool record (admits) registers with it.
	Memory *poolmemory.Registry
	// refusals remembers VsphereAgents failed by a permanent create refusal until the cache shows it.
	refusals refusalMemory
	// admits holds the maxVMs slots of VMs being created (admitVM).
	admits admissions
	// own lets a pass see this controller's last write of its VsphereAgent while the cache still lags
	// (else it would create the VM again and write the same status with a stale resourceVersion).
	own *poolmemory.OwnWrites[*afv1.VsphereAgent]
	// eject runs the ISO ejection phase (built on first use, see ejector).
	eject     *ejection.Ejector
	ejectOnce sync.Once
	// staticIP holds and settles the VM's static-IP lease (built on first use, see leases).
	staticIP     *staticip.Leases
	staticIPOnce sync.Once
	// checks paces observeVM's look-ups of each VM.
	checks vmChecks
	// holds defers the Available phase write (holdAvailable).
	holds availableHolds
	// resets remembers the discovery-boot resets this process made (recoverDiscoveryBoot).
	resets discoveryResets
	// joins paces the retries of failed cluster-module joins (joinClusterModule).
	joins joinBackoff
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
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	defer r.Opts.Liveness.Start(ControllerName, req.NamespacedName, r.Opts.VMPassTimeout)()
	ctx = r.Opts.WithCrashPoint(ctx, req.NamespacedName)
	start := r.Opts.Clock.Now()
	va := &afv1.VsphereAgent{}
	if err := r.Get(ctx, req.NamespacedName, va); err != nil {
		if apierrors.IsNotFound(err) {
			r.own.Forget(req.NamespacedName)
			r.holds.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	va = r.own.Latest(va)
	s := &vmScope{va: va, log: ctrl.LoggerFrom(ctx)}
	before := va.Status.DeepCopy()
	defer func() {
		conditions.StampTransitions(before.Conditions, va.Status.Conditions, r.Opts.Clock.Now())
		wrote, conflict := true, false
		if !conditions.SameAsStored(before, &va.Status) && (va.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(va, afv1.FinalizerVsphereAgent)) {
			replaced := va.ResourceVersion
			err := r.Status().Update(ctx, va)
			wrote = err == nil
			if wrote {
				r.own.Wrote(replaced, va)
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
			if s.pool != nil {
				r.Opts.Credentials.ForgetRefused(s.pool, retErr) // a session vCenter stopped accepting
			}
		}
		metrics.ReconcileDuration.WithLabelValues("vsphereagent", result).Observe(r.Opts.Clock.Since(start).Seconds())
		if retErr == nil && res.RequeueAfter == 0 {
			res.RequeueAfter = s.requeue
			if res.RequeueAfter == 0 && conflict {
				res.RequeueAfter = config.StatusConflictRequeue
			}
		}
	}()

	// The one gate of a VM's pass: before its finalizer, its VM, its Agent and its cleanup.
	if gate := r.Exclusion.Check(ctx); gate.Blocked {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, exclusion.StandDownReason(gate), gate.Message, va.Generation)
		s.requeueAfter(r.Exclusion.RecheckAfter())
		return ctrl.Result{}, nil
	}

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
	if upstream.Pending(va) { // the upstream operator's: only adoption may make it ours
		if done, err := r.reconcileUpstream(work, s); done || err != nil {
			return ctrl.Result{}, err
		}
	}
	if !va.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(work, s)
	}
	if pool == nil {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonPoolNotFound, "VsphereAgentPool "+va.Spec.PoolRef.Name+" not found", va.Generation)
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
		r.own.Wrote(replaced, va)
	}
	if pool.Spec.Paused {
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonPaused, "the pool is paused", va.Generation)
		return ctrl.Result{}, nil
	}
	if va.Status.VM.Phase == afv1.VMPhaseFailed {
		return ctrl.Result{}, nil // the pool replaces it and deletes it later
	}

	for _, phase := range []func(context.Context, *vmScope) (bool, error){
		r.ensureVM, r.joinClusterModule, r.matchAgent, r.observeVM, r.prepareAgent, r.checkValidations, r.trackBinding, r.reportImage, r.checkLiveness, r.ejectISO,
		r.recoverDiscoveryBoot,
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
	r.holdAvailable(s, before)
	return ctrl.Result{}, nil
}

// ejector returns the reconciler's Ejector, built on first use.
func (r *Reconciler) ejector() *ejection.Ejector {
	r.ejectOnce.Do(func() {
		r.eject = &ejection.Ejector{Reader: r.Client, Recorder: r.Recorder, Clock: r.Opts.Clock, Guard: r.Guard}
	})
	return r.eject
}

// leases returns the reconciler's lease handling, built on first use.
func (r *Reconciler) leases() *staticip.Leases {
	r.staticIPOnce.Do(func() {
		r.staticIP = &staticip.Leases{Client: r.Client, APIReader: r.APIReader, Recorder: r.Recorder, Clock: r.Opts.Clock}
	})
	return r.staticIP
}

// staticIPLease returns the MACs the VM is created with (static-IP pools: none for DHCP), holding a
// lease first; ok is false while the VM waits for one (phase Pending, condition VMCreated say why).
func (r *Reconciler) staticIPLease(ctx context.Context, s *vmScope) (held staticip.Held, ok bool, err error) {
	held, err = r.leases().Hold(ctx, s.va, s.pool)
	if err != nil {
		return held, false, err
	}
	if !held.Ready {
		va := s.va
		r.setPhase(va, afv1.VMPhasePending, held.Reason)
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, held.Reason, held.Message, va.Generation)
		s.requeueAfter(staticip.Poll)
		return held, false, nil
	}
	return held, true, nil
}

// ejectionPass is the ejection's view of the pass s.
func (r *Reconciler) ejectionPass(s *vmScope) *ejection.Pass {
	return &ejection.Pass{
		VA: s.va, Pool: s.pool, Agent: s.agent,
		Client:       func(ctx context.Context) (vsphere.Client, error) { return r.client(ctx, s) },
		RequeueAfter: s.requeueAfter,
		AfterWrite:   func(f func()) { s.afterWrite = append(s.afterWrite, f) },
	}
}

// ejectISO is the ISO ejection phase (package ejection); it never ends the pass early.
func (r *Reconciler) ejectISO(ctx context.Context, s *vmScope) (bool, error) {
	return true, r.ejector().Step(ctx, r.ejectionPass(s))
}

// setPhase moves the VM to a phase, stamping the transition time only on change.
func (r *Reconciler) setPhase(va *afv1.VsphereAgent, phase afv1.VMPhase, reason string) {
	if va.Status.VM.Phase == phase && va.Status.VM.Reason == reason {
		return
	}
	now := metav1.NewTime(r.Opts.Clock.Now())
	if va.Status.VM.Phase != phase {
		va.Status.VM.LastTransitionTime = &now
	}
	va.Status.VM.Phase, va.Status.VM.Reason = phase, reason
}

func (r *Reconciler) client(ctx context.Context, s *vmScope) (vsphere.Client, error) {
	if s.vs != nil {
		return s.vs, nil
	}
	if s.pool == nil {
		return nil, fmt.Errorf("VsphereAgentPool %s is gone: no credentials to reach vCenter", s.va.Spec.PoolRef.Name)
	}
	creds, err := r.Opts.Credentials.Recent(ctx, r.APIReader, s.pool, r.Opts.CredentialsSecretNamespaces)
	if err != nil {
		return nil, err
	}
	vs, err := r.Opts.Sessions.Get(ctx, creds)
	if err != nil {
		r.Opts.Credentials.ForgetRefused(s.pool, err)
		return nil, err
	}
	s.vs = vs
	return vs, nil
}

// ensureVM creates the VM once. Crash-safe: the instance UUID is this object's UID, so a retry after a
// crash between "created" and "status written" finds the VM instead of creating a second one.
func (r *Reconciler) ensureVM(ctx context.Context, s *vmScope) (bool, error) {
	va, pool := s.va, s.pool
	if va.Status.VM.InstanceUUID != "" && va.Status.VM.MACAddress != "" {
		return true, nil
	}
	if r.refusals.reapply(r, va) { // a stale read of a VsphereAgent already failed: never create again
		return false, nil
	}
	if iso.PoolISOPath(pool) == "" {
		r.setPhase(va, afv1.VMPhasePending, afv1.ReasonWaitingForISO)
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, afv1.ReasonWaitingForISO, "the pool's discovery ISO is not cached yet", va.Generation)
		return false, nil
	}
	if ok, err := r.admitVM(ctx, s); err != nil || !ok {
		return false, err
	}
	held, ready, err := r.staticIPLease(ctx, s)
	if err != nil || !ready {
		return false, err
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		r.setPhase(va, afv1.VMPhasePending, afv1.ReasonWaitingForVSphere)
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, credentials.VSphereReason(err), err.Error(), va.Generation)
		return r.createFailed(ctx, s, nil, va.Name, err, false)
	}
	if _, ok := poolspec.DomainOf(pool, va.Spec.FailureDomain); !ok {
		// The domain was removed from the pool before the VM was created: the pool releases this one.
		r.setPhase(va, afv1.VMPhasePending, afv1.ReasonFailureDomainNotFound)
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, afv1.ReasonFailureDomainNotFound,
			"failure domain "+va.Spec.FailureDomain+" is no longer in the pool's spec.vsphere.failureDomains; no VM is created", va.Generation)
		return false, nil
	}
	spec := vmSpec(va, pool)
	spec.MACAddress = held.MAC
	for i := range spec.AdditionalNICs {
		spec.AdditionalNICs[i].MACAddress = held.NICMACs[i+1]
	}
	spec.New = r.Opts.NoVMYet.Take(va.UID)
	spec.ClusterModule = clusterModuleOf(va, pool)
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
	va.Status.VM.MACAddresses = nil
	if len(info.MACAddresses) > 1 {
		for _, m := range info.MACAddresses {
			va.Status.VM.MACAddresses = append(va.Status.VM.MACAddresses, agents.NormalizeMAC(m))
		}
	}
	va.Status.VM.Datacenter, va.Status.VM.ISOPath = spec.Datacenter, spec.ISOPath
	va.Status.VM.Hardware = poolspec.HardwareStatus(spec.Hardware, info)
	if va.Status.VM.Template == nil { // the shape vmSpec just asked vCenter for: drift is measured from it
		va.Status.VM.Template = poolspec.TemplateRecord(pool, va.Spec.FailureDomain)
	}
	if t := pool.Status.ISO.SourceCreatedTime; t != nil && va.Status.VM.ImageCreatedTime == nil {
		va.Status.VM.ImageCreatedTime = t.DeepCopy()
	}
	if va.Status.VM.CreatedAt == nil {
		va.Status.VM.CreatedAt = &now
	}
	r.joinedAtCreate(s, spec, info)
	r.checks.done(va.UID, now.Time) // just created: the next look-up is one VMCheckInterval away
	r.ejector().SawVM(va.UID, pool, info)
	r.setPhase(va, afv1.VMPhaseProvisioning, afv1.ReasonAwaitingRegistration)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, true, afv1.ReasonVMCreated, "VM "+info.Name+" is powered on", va.Generation)
	if !info.Adopted { // just created and powered on in the pool's folder: what the first look-up would say
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMHealthy, true, afv1.ReasonVMRunning, runningMessage(info.Name, strings.Trim(spec.Folder, "/")), va.Generation)
	}
	if info.Adopted {
		r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonVMAdopted, events.ActionCreateVM, "found VM %s (instance UUID %s) from an earlier attempt; adopted it instead of creating another", info.Name, info.InstanceUUID)
	} else {
		r.Recorder.Batch(pool, afv1.ReasonVMCreated, events.ActionCreateVM, events.SummaryVMCreated,
			fmt.Sprintf("%s (VsphereAgent %s, instance UUID %s)", info.Name, va.Name, info.InstanceUUID))
	}
	return true, nil
}

// vmSpec renders the pool's template for this VM.
func vmSpec(va *afv1.VsphereAgent, pool *afv1.VsphereAgentPool) vsphere.VMSpec {
	v, t := pool.Spec.VSphere, pool.Spec.Template
	pl, _ := poolspec.DomainOf(pool, va.Spec.FailureDomain) // ensureVM checked it exists
	return vsphere.VMSpec{
		Name: va.Name, Datacenter: v.Datacenter, DatastoreCluster: pl.DatastoreCluster, ResourcePool: pl.ResourcePool,
		Folder: pl.Folder, Network: pl.Network, Tags: v.VMTags, GuestID: v.GuestID, SCSIType: v.SCSIType, Firmware: v.Firmware,
		NetworkAdapter: v.NetworkAdapterType, NumCPUs: t.NumCPUs, MemoryMiB: t.MemoryMiB, DiskGiB: t.DiskGiB,
		EagerlyScrub: v.DiskEagerlyScrub, ISOPath: iso.PoolISOPath(pool), Ownership: poolspec.Ownership(va, pool),
		Hardware: poolspec.Hardware(pool), AdditionalNICs: poolspec.AdditionalNICs(pool),
	}
}

// checkLiveness replaces a VM whose Agent has not registered within registrationTimeout.
func (r *Reconciler) checkLiveness(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	since, waiting := registrationWaitStart(va)
	if s.agent != nil || !waiting {
		return true, nil
	}
	timeout := poolspec.RegistrationTimeout(s.pool)
	left := since.Add(timeout).Sub(r.Opts.Clock.Now())
	if left > 0 {
		s.requeueAfter(left)
		return true, nil
	}
	// The cache may not have seen a registration of the last moments: confirm with a fresh read
	// before destroying; the Agent's event brings the next reconcile.
	if agent, err := agents.FreshHostAgent(ctx, r.APIReader, va.Namespace, va.Status.VM.MACAddress, va.Status.VM.BIOSUUID); err != nil {
		return false, err
	} else if agent != nil && !agent.Deleting {
		s.requeueAfter(time.Second)
		return true, nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return false, err
	}
	if err := r.leaveClusterModules(ctx, vs, va, s.pool); err != nil {
		return false, err
	}
	if err := vs.DestroyVM(ctx, poolspec.DatacenterOf(va, s.pool), string(va.UID), poolspec.Ownership(va, s.pool)); err != nil {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonVMDestroyFailed, events.ActionDestroyVM, "destroying unregistered VM %s: %v", va.Status.VM.Name, err)
		return false, err
	}
	r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonRegistrationTimeout, events.ActionAwaitAgent, "VM %s registered no Agent within %s; destroyed, the pool replaces it", va.Status.VM.Name, timeout)
	r.setPhase(va, afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, afv1.ReasonRegistrationTimeout,
		fmt.Sprintf("no Agent registered within %s", timeout), va.Generation)
	return false, nil
}

// registrationWaitStart is when the VM began waiting for an Agent: its creation, or, for a VM that never
// joined a cluster and whose Agent was deleted by hand, the moment the loss was seen (its host
// registers again only after a reboot; otherwise this deadline replaces it). ok is false when the VM
// does not wait for a registration.
func registrationWaitStart(va *afv1.VsphereAgent) (time.Time, bool) {
	vm := va.Status.VM
	if vm.CreatedAt == nil {
		return time.Time{}, false
	}
	if vm.AgentName == "" {
		return vm.CreatedAt.Time, true
	}
	if vm.Phase != afv1.VMPhaseProvisioning || vm.Reason != afv1.ReasonAgentMissing {
		return time.Time{}, false
	}
	// The latest of: creation, the move back to Provisioning (stamped with the injected clock in the
	// pass that saw the loss), and the AgentRegistered condition's transition (stamped at the end of it).
	since := vm.CreatedAt.Time
	if t := vm.LastTransitionTime; t != nil && t.After(since) {
		since = t.Time
	}
	if c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionAgentRegistered); c != nil && c.Reason == afv1.ReasonAgentMissing && c.LastTransitionTime.After(since) {
		since = c.LastTransitionTime.Time
	}
	return since, true
}

// setReady rolls the VM's state up into Ready.
func (r *Reconciler) setReady(s *vmScope) {
	va := s.va
	switch va.Status.VM.Phase {
	case afv1.VMPhaseBound:
		if reason, msg, ok := r.discoveryBootReady(s); ok && va.Status.VM.Reason == afv1.ReasonInstallingPendingUserAction {
			if reason == afv1.ReasonDiscoveryBootNotRecovered {
				// Announced once the condition is written: a pass whose write conflicts does not repeat it.
				if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionReady); c == nil || c.Reason != reason {
					s.afterWrite = append(s.afterWrite, func() {
						r.Recorder.Eventf(va, nil, "Warning", reason, events.ActionResetVM, "%s", msg)
					})
				}
			}
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, reason, msg, va.Generation)
			return
		}
		if va.Status.VM.Reason == afv1.ReasonInstallingPendingUserAction {
			info := ""
			if s.agent != nil {
				info = s.agent.StateInfo
			}
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonInstallingPendingUserAction,
				installingPendingUserActionMessage(va.Status.VM.Name, va.Status.VM.AgentName, info), va.Generation)
			return
		}
		if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentValidated); c != nil && c.Status == metav1.ConditionFalse &&
			s.agent != nil && s.agent.IsBound() && !s.agent.IsInstalled() {
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonHostValidationsFailing,
				fmt.Sprintf("VM %s is bound to Machine %s but its installation waits: %s. The operator never replaces a VM that backs a Machine: "+
					"fix the cause, or delete the Machine and CAPI replaces it", va.Status.VM.Name, va.Status.VM.MachineName, c.Message), va.Generation)
			return
		}
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, true, afv1.ReasonBound, "VM "+va.Status.VM.Name+" is "+string(va.Status.VM.Phase), va.Generation)
	case afv1.VMPhaseAvailable:
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, true, afv1.ReasonAvailable, "VM "+va.Status.VM.Name+" is "+string(va.Status.VM.Phase), va.Generation)
	default:
		msg := "VM phase " + string(va.Status.VM.Phase)
		if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionAgentValidated); c != nil &&
			va.Status.VM.Reason == afv1.ReasonHostValidationsFailing {
			msg = "VM " + va.Status.VM.Name + " is no supply while its host fails validations: " + c.Message
		}
		if va.Status.VM.Reason == afv1.ReasonUnbindingPendingUserAction {
			msg = unbindingPendingUserActionMessage(va.Status.VM.Name, va.Status.VM.AgentName, va.Status.VM.MachineName)
		}
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, va.Status.VM.Reason, msg, va.Generation)
	}
}
