package vsphereagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// createFailureReason is the VsphereAgent reason for a permanent CreateVM refusal.
func createFailureReason(err error) string {
	switch vsphere.ClassOf(err) {
	case vsphere.ClassDuplicateName:
		return afv1.ReasonDuplicateName
	case vsphere.ClassInvalid:
		return afv1.ReasonInvalidPlacement
	case vsphere.ClassOwnership:
		return afv1.ReasonOwnershipMismatch
	}
	return afv1.ReasonVMCreateFailed
}

// createFailed gives a failed VM creation an exit instead of a phase-less retry loop.
//   - A permanent refusal (permanentAllowed, see vsphere.IsPermanentCreateError: the name is taken by a
//     VM that is not ours, the placement does not resolve, a VM with our instance UUID lacks our marker)
//     makes the VsphereAgent Failed at once with that reason: the pool replaces it under a new name,
//     counts it towards the registration breaker (planner.CountsTowardsBreaker) and deletes it after FailedRetention like any failure.
//     The other VM is never touched.
//   - Anything else is retried with backoff until registrationTimeout, counted from the VsphereAgent's
//     creation, has passed; then it is Failed (RegistrationTimeout) as well.
func (r *Reconciler) createFailed(ctx context.Context, s *vmScope, vs vsphere.Client, vmName string, err error, permanentAllowed bool) (bool, error) {
	va := s.va
	if permanentAllowed && vsphere.IsPermanentCreateError(err) {
		reason := createFailureReason(err)
		msg := fmt.Sprintf("vCenter refused to create VM %s: %v; the pool replaces this VsphereAgent under a new name", vmName, err)
		r.refusals.remember(va.UID, refusal{reason: reason, message: msg, at: r.Opts.Clock.Now()})
		r.refusals.reapply(r, va)
		r.Recorder.Eventf(va, nil, "Warning", reason, events.ActionCreateVM, "%s", msg)
		s.log.Info("VM creation refused for good; VsphereAgent failed", "vm", vmName, "reason", reason)
		return false, nil
	}
	timeout := poolspec.RegistrationTimeout(s.pool)
	if deadline := va.CreationTimestamp.Add(timeout); r.Opts.Clock.Now().Before(deadline) {
		if va.Status.VM.Phase == "" || va.Status.VM.Reason != afv1.ReasonWaitingForVSphere {
			r.setPhase(va, afv1.VMPhasePending, afv1.ReasonVMCreateFailed)
		}
		if permanentAllowed {
			conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, string(vsphere.ClassOf(err)), err.Error(), va.Generation)
			r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonVMCreateFailed, events.ActionCreateVM, "creating VM %s: %v", vmName, err)
		}
		conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, va.Status.VM.Reason,
			fmt.Sprintf("VM %s not created yet: %v (retried until %s after this VsphereAgent's creation)", vmName, err, timeout), va.Generation)
		return false, err
	}
	// Out of time: a create task that timed out may still have left a VM; destroy it by our instance
	// UUID (ownership verified, absent is success) before failing.
	if vs != nil {
		if lerr := r.leaveClusterModules(ctx, vs, va, s.pool); lerr != nil {
			return false, errors.Join(err, lerr)
		}
		if derr := vs.DestroyVM(ctx, poolspec.DatacenterOf(va, s.pool), string(va.UID), poolspec.Ownership(va, s.pool)); derr != nil && vsphere.ClassOf(derr) != vsphere.ClassOwnership {
			return false, errors.Join(err, derr)
		}
	}
	msg := fmt.Sprintf("VM %s could not be created within %s of this VsphereAgent's creation (last error: %v); the pool replaces it", vmName, timeout, err)
	r.setPhase(va, afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, afv1.ReasonRegistrationTimeout, msg, va.Generation)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionAgentRegistered, false, afv1.ReasonRegistrationTimeout, msg, va.Generation)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, afv1.ReasonRegistrationTimeout, msg, va.Generation)
	r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonRegistrationTimeout, events.ActionAwaitAgent, "%s", msg)
	return false, nil
}

// refusal is a permanent create refusal of one VsphereAgent.
type refusal struct {
	reason, message string
	at              time.Time
}

// refusalMemory keeps permanent create refusals until the VsphereAgent's Failed status is certainly
// seen: a pass that reads the object from a cache that has not caught up with the Failed write (or whose
// write conflicted) must not create the VM under the refused name after all. The zero value is ready.
type refusalMemory struct {
	mu sync.Mutex
	m  map[types.UID]refusal
}

// refusalMemoryTTL bounds the memory: far longer than any cache lag, shorter than FailedRetention's default.
const refusalMemoryTTL = 30 * time.Minute

func (m *refusalMemory) remember(uid types.UID, f refusal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[types.UID]refusal{}
	}
	for k, v := range m.m {
		if f.at.Sub(v.at) > refusalMemoryTTL {
			delete(m.m, k)
		}
	}
	m.m[uid] = f
}

// reapply sets the Failed phase and conditions of a remembered refusal on va; false when none.
func (m *refusalMemory) reapply(r *Reconciler, va *afv1.VsphereAgent) bool {
	m.mu.Lock()
	f, ok := m.m[va.UID]
	m.mu.Unlock()
	if !ok {
		return false
	}
	if va.Status.VM.Phase != afv1.VMPhaseFailed {
		r.setPhase(va, afv1.VMPhaseFailed, f.reason)
		t := metav1.NewTime(f.at)
		va.Status.VM.LastTransitionTime = &t // when it failed, not when a stale pass saw it again
	}
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionVMCreated, false, f.reason, f.message, va.Generation)
	conditions.SetCondition(&va.Status.Conditions, afv1.ConditionReady, false, f.reason, f.message, va.Generation)
	return true
}
