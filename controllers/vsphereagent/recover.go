package vsphereagent

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/conditions"
	"github.com/containeroo/agent-forge-operator/internal/events"
	"github.com/containeroo/agent-forge-operator/internal/poolspec"
)

// A bound worker whose host booted the discovery image again waits at assisted-service's
// installing-pending-user-action until someone boots it into its installed disk. With
// spec.iso.recoverDiscoveryBoot the operator does it: the ejection phase empties the CD-ROM first
// (package ejection: its trigger includes such a worker), then this phase puts the disk first and resets
// the VM, once per occurrence. The reset is recorded in status.vm.discoveryBootResetAt (and in memory,
// so a CRD that prunes the field costs at most one more reset per process), and cleared when the Agent
// leaves the state. A worker still waiting registrationTimeout after its reset is reported and left alone:
// resetting again would not change what made it boot discovery.

// discoveryResets remembers, per VsphereAgent UID, the reset this process made.
type discoveryResets struct{ m sync.Map }

func (d *discoveryResets) made(uid types.UID) bool { _, ok := d.m.Load(uid); return ok }
func (d *discoveryResets) record(uid types.UID)    { d.m.Store(uid, struct{}{}) }
func (d *discoveryResets) forget(uid types.UID)    { d.m.Delete(uid) }

// recoverDiscoveryBoot is the recovery phase (after ejectISO); it never ends the pass early.
func (r *Reconciler) recoverDiscoveryBoot(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	stuck := s.agent != nil && s.agent.BootedDiscoveryAgain() && va.Status.VM.Phase == afv1.VMPhaseBound
	if !stuck {
		if va.Status.VM.DiscoveryBootResetAt != nil && s.agent != nil {
			va.Status.VM.DiscoveryBootResetAt = nil
			agent, vm := s.agent.Name, va.Status.VM.Name
			// Once the cleared record is written: a pass whose write conflicts sees the record again.
			s.afterWrite = append(s.afterWrite, func() {
				r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonDiscoveryBootRecovered, events.ActionResetVM,
					"Agent %s of VM %s left installing-pending-user-action after the reset", agent, vm)
			})
		}
		r.resets.forget(va.UID)
		return true, nil
	}
	if s.pool == nil || !s.pool.Spec.ISO.RecoverDiscoveryBoot {
		return true, nil
	}
	if va.Status.VM.DiscoveryBootResetAt != nil || r.resets.made(va.UID) {
		if at := va.Status.VM.DiscoveryBootResetAt; at != nil {
			if left := poolspec.RegistrationTimeout(s.pool) - r.Opts.Clock.Since(at.Time); left > 0 {
				s.requeueAfter(left)
			}
		}
		return true, nil
	}
	if c := conditions.FindCondition(va.Status.Conditions, afv1.ConditionISOEjected); c == nil || c.Status != metav1.ConditionTrue {
		return true, nil // the ejection phase empties the CD-ROM first
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return true, err
	}
	if err := vs.ResetVM(ctx, poolspec.DatacenterOf(va, s.pool), va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID, poolspec.Ownership(va, s.pool)); err != nil {
		r.Recorder.Eventf(va, nil, "Warning", afv1.ReasonDiscoveryBootResetFailed, events.ActionResetVM,
			"resetting VM %s, whose host booted the discovery image again, failed: %v", va.Status.VM.Name, err)
		return true, err
	}
	now := metav1.NewTime(r.Opts.Clock.Now())
	va.Status.VM.DiscoveryBootResetAt = &now
	r.resets.record(va.UID)
	r.Recorder.Eventf(va, nil, "Normal", afv1.ReasonDiscoveryBootReset, events.ActionResetVM,
		"VM %s booted the discovery image again (Agent %s at installing-pending-user-action): its ISO is ejected, its disk is first in its boot order, and it was reset to boot its installed disk",
		va.Status.VM.Name, s.agent.Name)
	s.requeueAfter(poolspec.RegistrationTimeout(s.pool))
	return true, nil
}

// discoveryBootReady is the Ready condition of a worker at installing-pending-user-action: ok is false
// when the pool does not recover such workers or no reset was made (the plain report applies).
func (r *Reconciler) discoveryBootReady(s *vmScope) (reason, msg string, ok bool) {
	va := s.va
	at := va.Status.VM.DiscoveryBootResetAt
	if s.pool == nil || !s.pool.Spec.ISO.RecoverDiscoveryBoot || at == nil {
		return "", "", false
	}
	timeout := poolspec.RegistrationTimeout(s.pool)
	if r.Opts.Clock.Since(at.Time) < timeout {
		return afv1.ReasonInstallingPendingUserAction, fmt.Sprintf("Agent %s booted the discovery image again; VM %s was reset at %s to boot its installed disk "+
			"(ISO ejected, disk first in its boot order); waiting for the Agent to leave installing-pending-user-action",
			va.Status.VM.AgentName, va.Status.VM.Name, at.UTC().Format(time.RFC3339)), true
	}
	return afv1.ReasonDiscoveryBootNotRecovered, fmt.Sprintf("Agent %s is still at installing-pending-user-action %s after VM %s was reset (at %s) to boot its installed disk; "+
		"nothing more is tried: open the VM's console to see what it boots, fix it and reset it, or delete Machine %s and CAPI replaces it",
		va.Status.VM.AgentName, timeout, va.Status.VM.Name, at.UTC().Format(time.RFC3339), va.Status.VM.MachineName), true
}
