package planner

import (
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func TestLifecycle(t *testing.T) {
	tests := []struct {
		name string
		obs  VMObservation
		want VMLifecycle
	}{
		{name: "never written yet: in flight", obs: VMObservation{}, want: VMInFlight},
		{name: "pending (waiting for the ISO or vCenter): in flight", obs: VMObservation{Phase: afv1.VMPhasePending}, want: VMInFlight},
		{name: "provisioning: in flight", obs: VMObservation{Phase: afv1.VMPhaseProvisioning}, want: VMInFlight},
		{name: "available", obs: VMObservation{Phase: afv1.VMPhaseAvailable}, want: VMAvailable},
		{name: "bound", obs: VMObservation{Phase: afv1.VMPhaseBound}, want: VMInUse},
		{name: "released", obs: VMObservation{Phase: afv1.VMPhaseReleased}, want: VMReleased},
		{name: "failed", obs: VMObservation{Phase: afv1.VMPhaseFailed, Reason: afv1.ReasonDuplicateName}, want: VMFailed},
		{name: "deletion timestamp: releasing, whatever the phase", obs: VMObservation{Phase: afv1.VMPhaseBound, Deleting: true}, want: VMReleasing},
		{name: "delete issued, not yet seen: releasing", obs: VMObservation{Phase: afv1.VMPhaseAvailable, DeleteIssued: true}, want: VMReleasing},
		{name: "deleting failed VM: releasing", obs: VMObservation{Phase: afv1.VMPhaseFailed, Deleting: true}, want: VMReleasing},
		{name: "Agent already bound, status still available: in use", obs: VMObservation{Phase: afv1.VMPhaseAvailable, AgentBound: true}, want: VMInUse},
		{name: "Agent already bound, status still provisioning: in use", obs: VMObservation{Phase: afv1.VMPhaseProvisioning, AgentBound: true}, want: VMInUse},
		{name: "Agent bound again after release: in use", obs: VMObservation{Phase: afv1.VMPhaseReleased, AgentBound: true}, want: VMInUse},
		{name: "Agent bound while deleting: releasing", obs: VMObservation{Phase: afv1.VMPhaseAvailable, AgentBound: true, Deleting: true}, want: VMReleasing},
		{name: "failed stays failed when its Agent is bound", obs: VMObservation{Phase: afv1.VMPhaseFailed, AgentBound: true}, want: VMFailed},
		{name: "failed stays failed with a machineRef", obs: VMObservation{Phase: afv1.VMPhaseFailed, MachineRef: true}, want: VMFailed},
		{name: "machineRef makes an available VM in use", obs: VMObservation{Phase: afv1.VMPhaseAvailable, MachineRef: true}, want: VMInUse},
		{name: "machineRef makes an in-flight VM in use", obs: VMObservation{Phase: afv1.VMPhaseProvisioning, MachineRef: true}, want: VMInUse},
		{name: "released keeps its leftover machineRef: released", obs: VMObservation{Phase: afv1.VMPhaseReleased, MachineRef: true}, want: VMReleased},
		{name: "unknown phase: in flight", obs: VMObservation{Phase: afv1.VMPhaseDeleting}, want: VMInFlight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Lifecycle(tt.obs); got != tt.want {
				t.Errorf("Lifecycle(%+v) = %s, want %s", tt.obs, got, tt.want)
			}
		})
	}
}

func TestFailedExpired(t *testing.T) {
	failedAt := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const retention = time.Hour
	tests := []struct {
		name string
		obs  VMObservation
		now  time.Time
		want bool
	}{
		{name: "failed, within retention: kept", obs: VMObservation{Phase: afv1.VMPhaseFailed, PhaseChangedAt: failedAt}, now: failedAt.Add(30 * time.Minute)},
		{name: "failed, exactly at retention: kept", obs: VMObservation{Phase: afv1.VMPhaseFailed, PhaseChangedAt: failedAt}, now: failedAt.Add(retention)},
		{name: "failed, past retention: expired", obs: VMObservation{Phase: afv1.VMPhaseFailed, PhaseChangedAt: failedAt}, now: failedAt.Add(retention + time.Second), want: true},
		{name: "duplicate name past retention: expired like any failure", obs: VMObservation{Phase: afv1.VMPhaseFailed, Reason: afv1.ReasonDuplicateName, PhaseChangedAt: failedAt}, now: failedAt.Add(2 * retention), want: true},
		{name: "already deleting: left alone", obs: VMObservation{Phase: afv1.VMPhaseFailed, PhaseChangedAt: failedAt, Deleting: true}, now: failedAt.Add(2 * retention)},
		{name: "failure time unknown: kept", obs: VMObservation{Phase: afv1.VMPhaseFailed}, now: failedAt.Add(2 * retention)},
		{name: "not failed: never expires", obs: VMObservation{Phase: afv1.VMPhaseAvailable, PhaseChangedAt: failedAt}, now: failedAt.Add(2 * retention)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failedExpired(tt.obs, tt.now, retention); got != tt.want {
				t.Errorf("FailedExpired = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestRegistrationFailing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	failed := func(reason string, minute int) VMObservation {
		return VMObservation{Phase: afv1.VMPhaseFailed, Reason: reason, PhaseChangedAt: t0.Add(time.Duration(minute) * time.Minute)}
	}
	registered := func(minute int) VMObservation {
		return VMObservation{Phase: afv1.VMPhaseAvailable, RegisteredAt: t0.Add(time.Duration(minute) * time.Minute)}
	}
	timeout := afv1.ReasonRegistrationTimeout
	tests := []struct {
		name string
		vms  []VMObservation
		want bool
	}{
		{name: "no VMs: closed", vms: nil},
		{name: "two timeouts: below threshold", vms: []VMObservation{failed(timeout, 1), failed(timeout, 2)}},
		{name: "three timeouts: open", vms: []VMObservation{failed(timeout, 1), failed(timeout, 2), failed(timeout, 3)}, want: true},
		{name: "permanent create refusals count", vms: []VMObservation{failed(afv1.ReasonDuplicateName, 1), failed(afv1.ReasonInvalidPlacement, 2), failed(afv1.ReasonOwnershipMismatch, 3)}, want: true},
		{name: "other failure reasons do not count", vms: []VMObservation{failed("VMNotFound", 1), failed(afv1.ReasonVMCreateFailed, 2), failed(timeout, 3)}},
		{name: "a registration after the failures closes it", vms: []VMObservation{failed(timeout, 1), failed(timeout, 2), failed(timeout, 3), registered(4)}},
		{name: "failures after the last registration count", vms: []VMObservation{registered(1), failed(timeout, 2), failed(timeout, 3), failed(timeout, 4)}, want: true},
		{name: "failures before the last registration do not", vms: []VMObservation{failed(timeout, 1), failed(timeout, 2), registered(3), failed(timeout, 4)}},
		{name: "a failure at the very moment of the registration does not count", vms: []VMObservation{registered(2), failed(timeout, 2), failed(timeout, 3), failed(timeout, 4)}},
		{name: "failure time unknown does not count", vms: []VMObservation{{Phase: afv1.VMPhaseFailed, Reason: timeout}, failed(timeout, 2), failed(timeout, 3)}},
		{name: "a deleting failed VM still counts (it is evidence until gone)", vms: []VMObservation{func() VMObservation { o := failed(timeout, 1); o.Deleting = true; return o }(), failed(timeout, 2), failed(timeout, 3)}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := registrationFailing(tt.vms, 3); got != tt.want {
				t.Errorf("RegistrationFailing = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestCountsTowardsBreaker(t *testing.T) {
	for reason, want := range map[string]bool{
		afv1.ReasonRegistrationTimeout: true, afv1.ReasonDuplicateName: true, afv1.ReasonInvalidPlacement: true, afv1.ReasonOwnershipMismatch: true,
		afv1.ReasonHostValidationFailed: true,
		afv1.ReasonVMCreateFailed:       false, "VMNotFound": false, "": false,
	} {
		if got := CountsTowardsBreaker(reason); got != want {
			t.Errorf("CountsTowardsBreaker(%q) = %t, want %t", reason, got, want)
		}
	}
}

func TestMayHaveVM(t *testing.T) {
	tests := []struct {
		phase  afv1.VMPhase
		reason string
		want   bool
	}{
		{afv1.VMPhaseProvisioning, "", true},
		{afv1.VMPhasePending, afv1.ReasonVMCreateFailed, true}, // a create task that failed may have left a VM
		{afv1.VMPhaseDeleting, "Deleting", true},               // its destroy may be held
		{afv1.VMPhaseReleased, "", true},
		{afv1.VMPhaseFailed, afv1.ReasonRegistrationTimeout, false}, // destroyed before it failed
		{afv1.VMPhaseFailed, afv1.ReasonVMNotFound, false},
		{afv1.VMPhaseFailed, afv1.ReasonDuplicateName, false}, // never created as ours
		{afv1.VMPhaseFailed, afv1.ReasonInvalidPlacement, false},
		{afv1.VMPhaseFailed, afv1.ReasonOwnershipMismatch, false},
		{afv1.VMPhaseFailed, "SomethingElse", true}, // a failure that does not record the VM's absence
	}
	for _, tt := range tests {
		if got := MayHaveVM(tt.phase, tt.reason); got != tt.want {
			t.Errorf("MayHaveVM(%s, %q) = %t, want %t", tt.phase, tt.reason, got, tt.want)
		}
	}
}
