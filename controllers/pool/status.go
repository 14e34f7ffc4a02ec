package pool

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers/ejection"
	"github.com/containeroo/agent-forge-operator/controllers/staticip"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/credentials"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/planner"
)

// setStatus writes every counter and every owned condition from what the pass observed.
func (r *Reconciler) setStatus(s *poolScope, success bool) {
	p := s.pool
	st := &p.Status
	gen := p.Generation
	if success {
		st.ObservedGeneration = gen
	}
	r.noOtherManager(p)

	if s.claimErr != "" {
		conditions.SetCondition(&st.Conditions, afv1.ConditionNodePoolClaimed, false, afv1.ReasonNodePoolAlreadyClaimed, s.claimErr, gen)
		conditions.SetCondition(&st.Conditions, afv1.ConditionReady, false, afv1.ReasonNodePoolAlreadyClaimed, s.claimErr, gen)
		return
	}
	conditions.SetCondition(&st.Conditions, afv1.ConditionNodePoolClaimed, true, afv1.ReasonClaimed, "this pool serves NodePool "+p.Spec.NodePoolRef.Name, gen)
	if r.setRefsStatus(s) {
		return
	}

	// Demand counters.
	st.AgentMachines = int32(len(s.agentMachines))
	st.WaitingAgentMachines = int32(s.waiting)
	var unready, withoutAgent int32
	for _, am := range s.agentMachines {
		if !am.IsReady() {
			unready++
		}
		if am.AgentRef == "" {
			withoutAgent++
		}
	}
	st.UnreadyAgentMachines, st.AgentMachinesWithoutAgent = unready, withoutAgent
	st.DesiredReplicas = 0
	for _, am := range s.agentMachines {
		if !am.Deleting {
			st.DesiredReplicas++
		}
	}
	conditions.SetCondition(&st.Conditions, afv1.ConditionDemandObserved, true, afv1.ReasonDemandObserved,
		fmt.Sprintf("%d of %d AgentMachine(s) wait for an Agent", s.waiting, len(s.agentMachines)), gen)

	// Agent counters.
	var bound, available int32
	for _, a := range s.matching {
		if a.IsBound() {
			bound++
		} else if a.IsSuitable() {
			available++
		}
	}
	st.MatchingAgents, st.BoundAgents, st.AvailableAgents = int32(len(s.matching)), bound, available

	// VMs.
	st.OwnedVMs = st.OwnedVMs[:0]
	for _, va := range s.vas {
		st.OwnedVMs = append(st.OwnedVMs, afv1.OwnedVM{Name: va.Name, InstanceUUID: va.Status.VM.InstanceUUID,
			Phase: va.Status.VM.Phase, AgentName: va.Status.VM.AgentName, MachineName: va.Status.VM.MachineName, Address: staticip.AddressOf(&va)})
	}
	if len(st.OwnedVMs) == 0 {
		st.OwnedVMs = nil
	}
	st.VMs = int32(len(s.vas))
	if n, ok := r.copies.count(client.ObjectKeyFromObject(p), p.UID); ok {
		st.Copies = n // kept as last written until this process has scanned
	}
	st.ISOEjections = ejection.Summary(s.vas)
	r.Guard.ReportOn(p)
	staticip.SetStatus(p, s.staticIP)

	st.PlannedActions = nil
	for _, a := range s.plan.Actions {
		st.PlannedActions = append(st.PlannedActions, afv1.PlannedAction{Action: a.Kind, Target: a.Target, Reason: a.Reason, Message: a.Message})
	}

	// InfraEnv.
	prevInfraEnv := meta.FindStatusCondition(st.Conditions, afv1.ConditionInfraEnvAvailable)
	wasMissing := prevInfraEnv != nil && prevInfraEnv.Reason == afv1.ReasonInfraEnvNotFound
	if wasMissing && s.infraEnv != nil {
		r.Recorder.Eventf(p, nil, "Normal", afv1.ReasonInfraEnvFound, events.ActionRefreshISO, "InfraEnv %s exists again; the pool resumes once it publishes a discovery ISO URL", s.infraEnv.Name)
	}
	switch {
	case s.infraEnv == nil && s.infraEnvErr != "":
		if !wasMissing {
			// Deleted (or never there): bound VMs are kept, no VM is created until it is back.
			r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonInfraEnvNotFound, events.ActionRefreshISO, "%s: no VM is created until it exists; existing VMs are kept", s.infraEnvErr)
		}
		conditions.SetCondition(&st.Conditions, afv1.ConditionInfraEnvAvailable, false, afv1.ReasonInfraEnvNotFound, s.infraEnvErr, gen)
	case s.infraEnvErr != "":
		conditions.SetCondition(&st.Conditions, afv1.ConditionInfraEnvAvailable, false, afv1.ReasonInfraEnvNotReady, s.infraEnvErr, gen)
	default:
		conditions.SetCondition(&st.Conditions, afv1.ConditionInfraEnvAvailable, true, afv1.ReasonISOURLAvailable, "the InfraEnv publishes a discovery ISO URL", gen)
	}

	// vSphere.
	setVSphereReachable(&st.Conditions, s.vsErr, s.creds.Server, gen)

	r.setTLSVerified(p, s)

	if s.isoCond != nil {
		conditions.SetCondition(&st.Conditions, afv1.ConditionISOReady, s.isoCond.status, s.isoCond.reason, s.isoCond.message, gen)
	}

	r.setRegistrationOK(s)
	r.setHardwareRefused(s)

	// Capacity.
	switch {
	case p.Spec.Paused:
		conditions.SetCondition(&st.Conditions, afv1.ConditionCapacitySatisfied, false, afv1.ReasonPaused, "spec.paused is true", gen)
	case s.plan.Deficit == 0 && s.plan.InFlight == 0 && s.waiting == 0:
		conditions.SetCondition(&st.Conditions, afv1.ConditionCapacitySatisfied, true, afv1.ReasonCapacitySatisfied, "no AgentMachine waits for an Agent", gen)
	case s.plan.Deficit == 0:
		conditions.SetCondition(&st.Conditions, afv1.ConditionCapacitySatisfied, false, afv1.ReasonProvisioningInProgress,
			fmt.Sprintf("%d AgentMachine(s) wait; %d VM(s) in flight", s.waiting, s.plan.InFlight), gen)
	default:
		reason, msg := afv1.ReasonDeficit, fmt.Sprintf("%d more VM(s) needed", s.plan.Deficit)
		for _, a := range s.plan.Actions {
			if a.Kind == planner.ActionWait || a.Kind == planner.ActionRefuse {
				reason, msg = a.Reason, a.Message
			}
		}
		conditions.SetCondition(&st.Conditions, afv1.ConditionCapacitySatisfied, false, reason, msg, gen)
	}

	// Ready rolls up what the pool needs to act.
	ready, reason, msg := true, afv1.ReasonReady, "the pool can serve its NodePool"
	for _, t := range []string{afv1.ConditionInfraEnvAvailable, afv1.ConditionVSphereReachable, afv1.ConditionAgentLabelsMatch,
		afv1.ConditionSpecHonoured, afv1.ConditionPlacementValid, afv1.ConditionPrivilegesSufficient, afv1.ConditionISOReady, afv1.ConditionRegistrationOK} {
		if c := conditions.FindCondition(st.Conditions, t); c != nil && c.Status != "True" {
			ready, reason, msg = false, c.Reason, c.Message
			break
		}
	}
	if ready && s.staticIP.Block() != "" {
		ready, reason, msg = false, s.staticIP.Block(), s.staticIP.BlockMessage()
	}
	if p.Spec.Paused {
		ready, reason, msg = false, afv1.ReasonPaused, "spec.paused is true: no action is taken"
	}
	conditions.SetCondition(&st.Conditions, afv1.ConditionReady, ready, reason, msg, gen)

	r.setStandby(s)
	r.setTemplateDrift(s, s.planned)
	recordPoolMetrics(p, s)
}

func recordPoolMetrics(p *afv1.VsphereAgentPool, s *poolScope) {
	ns, name := p.Namespace, p.Name
	metrics.PoolWaiting.WithLabelValues(ns, name).Set(float64(s.waiting))
	for state, v := range map[string]int{"waiting": s.waiting, "inflight": s.plan.InFlight, "available": s.plan.Available,
		"bound": s.plan.InUse, "failed": s.plan.Failed} {
		metrics.PoolCapacity.WithLabelValues(ns, name, state).Set(float64(v))
	}
	trips, unverified := 0.0, 0.0
	if c := conditions.FindCondition(p.Status.Conditions, afv1.ConditionRegistrationOK); c != nil && c.Status == metav1.ConditionFalse && p.Status.RegistrationBreaker != nil {
		trips = float64(p.Status.RegistrationBreaker.Trips)
	}
	if c := conditions.FindCondition(p.Status.Conditions, afv1.ConditionVCenterTLSVerified); c != nil && c.Reason == afv1.ReasonInsecureSkipVerify {
		unverified = 1
	}
	metrics.PoolRegistrationBreakerTrips.WithLabelValues(ns, name).Set(trips)
	metrics.PoolVCenterTLSUnverified.WithLabelValues(ns, name).Set(unverified)
	for _, va := range s.vas {
		vm := va.Name
		metrics.VMResources.WithLabelValues(ns, name, vm, "cpus").Set(float64(p.Spec.Template.NumCPUs))
		metrics.VMResources.WithLabelValues(ns, name, vm, "memory_bytes").Set(float64(p.Spec.Template.MemoryMiB) * 1024 * 1024)
		metrics.VMResources.WithLabelValues(ns, name, vm, "disk_bytes").Set(float64(p.Spec.Template.DiskGiB) * 1024 * 1024 * 1024)
	}
}

func forgetPoolMetrics(ns, name string) {
	labels := map[string]string{metrics.LabelPoolNamespace: ns, "pool": name}
	metrics.PoolWaiting.DeletePartialMatch(labels)
	metrics.PoolDemandUnobserved.DeletePartialMatch(labels)
	metrics.PoolCapacity.DeletePartialMatch(labels)
	metrics.VMResources.DeletePartialMatch(labels)
	metrics.PoolHeadroom.DeletePartialMatch(labels)
	metrics.PoolStandbyDesired.DeletePartialMatch(labels)
	metrics.PoolStandbyReady.DeletePartialMatch(labels)
	metrics.PoolDriftedWorkers.DeletePartialMatch(labels)
	metrics.DemandToBound.DeletePartialMatch(labels)
	metrics.PoolRegistrationBreakerTrips.DeletePartialMatch(labels)
	metrics.PoolVCenterTLSUnverified.DeletePartialMatch(labels)
}

// setTLSVerified warns while vCenter's certificate is not verified (insecure: "true"): the pool works, but
// whoever sits on the path to vCenter can read the password. A Warning Event marks each switch to insecure.
func (r *Reconciler) setTLSVerified(p *afv1.VsphereAgentPool, s *poolScope) {
	st := &p.Status
	if s.creds.Server == "" {
		return // credentials not read: nothing known about their TLS settings
	}
	if !s.creds.Insecure {
		conditions.SetCondition(&st.Conditions, afv1.ConditionVCenterTLSVerified, true, afv1.ReasonCertificateVerified,
			"vCenter's certificate is verified (caBundle, thumbprint, or the system and cluster trust)", p.Generation)
		return
	}
	const msg = `the credentials Secret sets insecure: "true": vCenter's certificate is not verified, so anyone on the path to vCenter can impersonate it and read its password; set caBundle or thumbprint instead`
	if c := conditions.FindCondition(st.Conditions, afv1.ConditionVCenterTLSVerified); c == nil || c.Reason != afv1.ReasonInsecureSkipVerify {
		r.Recorder.Eventf(p, nil, "Warning", afv1.ReasonInsecureSkipVerify, events.ActionPreflight, "%s", msg)
	}
	conditions.SetCondition(&st.Conditions, afv1.ConditionVCenterTLSVerified, false, afv1.ReasonInsecureSkipVerify, msg, p.Generation)
}

// setVSphereReachable sets VSphereReachable from the pass's credentials or login error (nil: logged in
// to server). Pure, so the preflight fuzz test drives it with random Secrets.
func setVSphereReachable(conds *[]metav1.Condition, vsErr error, server string, gen int64) {
	if vsErr != nil {
		conditions.SetCondition(conds, afv1.ConditionVSphereReachable, false, credentials.VSphereReason(vsErr), vsErr.Error(), gen)
		return
	}
	conditions.SetCondition(conds, afv1.ConditionVSphereReachable, true, afv1.ReasonConnected, "logged in to "+server, gen)
}

// timedStatusWrite is writeStatus observed as the pass's "status" phase.
func (r *Reconciler) timedStatusWrite(ctx context.Context, pool *afv1.VsphereAgentPool) error {
	began := r.Opts.Clock.Now()
	defer func() {
		metrics.PoolPhaseDuration.WithLabelValues("status").Observe(r.Opts.Clock.Since(began).Seconds())
	}()
	return r.writeStatus(ctx, pool)
}

// writeStatus writes the pool's status and remembers the write (see poolmemory.OwnWrites). The version it replaces
// is read before the call: in "rv, err := pool.ResourceVersion, Update(pool)" Go leaves the order of
// the field read and the call unspecified, and reading it after the update remembered the new version
// as replaced, so a pass that started before the cache caught up wrote with a stale version (a conflict).
func (r *Reconciler) writeStatus(ctx context.Context, pool *afv1.VsphereAgentPool) error {
	replaced := pool.ResourceVersion
	if err := r.Status().Update(ctx, pool); err != nil {
		return err
	}
	r.own.Wrote(replaced, pool)
	return nil
}
