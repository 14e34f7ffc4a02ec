package controllers

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/internal/iso"
	"github.com/containeroo/agent-forge-operator/internal/metrics"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get

// Ejection (SPEC §6), one step per pass so a reconcile never waits on a task a guest holds:
//  1. trigger: the Agent reports Installed=True, the VM is bound, its Machine is not being deleted;
//  2. record first: status.isoEjection names the VM, ownership, datacenter, device and exact ISO path;
//  3. start the reconfigure (TaskRef recorded), check it on later passes;
//  4. if the guest locked the door, checkpoint the question ID, and only then answer "Yes" to it;
//  5. clear the record after success. Refusals (media changed, another question) are retried with backoff.

const (
	ejectPollInterval = 5 * time.Second
	ejectBackoffBase  = 30 * time.Second
	ejectBackoffMax   = 10 * time.Minute
)

func (r *VsphereAgentReconciler) reconcileEjection(ctx context.Context, s *vmScope) (bool, error) {
	va := s.va
	if va.Status.ISOEjection != nil {
		return true, r.stepEjection(ctx, s)
	}
	if c := findCondition(va.Status.Conditions, afv1.ConditionISOEjected); c != nil && c.Reason == afv1.ReasonEjected && c.Status == metav1.ConditionTrue {
		return true, nil
	}
	if s.agent == nil || !s.agent.IsInstalled() || va.Status.VM.Phase != afv1.VMPhaseBound {
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonWaitingForInstallation, "waiting for the Agent to report Installed=True", va.Generation)
		return true, nil
	}
	if deleting, err := r.machineDeleting(ctx, s); err != nil || deleting {
		return true, err
	}
	if ok, msg := r.ejectionSupported(ctx); !ok {
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, msg, va.Generation)
		return true, nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return false, err
	}
	dc := datacenterOf(va, s.pool)
	info, err := vs.FindVM(ctx, dc, va.Status.VM.InstanceUUID, va.Status.VM.BIOSUUID)
	if err != nil {
		return false, err
	}
	// Only a content-addressed ISO on the pool's ISO datastore under its prefix is ever touched.
	prefix, ds := iso.PathPrefix(s.pool), s.pool.Spec.VSphere.ISODatastore
	var target *vsphere.CDROM
	for i := range info.CDROMs {
		if cd := info.CDROMs[i]; cd.ISOPath != "" && iso.IsCachedISOPath(cd.ISOPath, ds, prefix) {
			target = &info.CDROMs[i]
			break
		}
	}
	if target == nil {
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, true, afv1.ReasonEjected, "no discovery ISO of this pool is attached", va.Generation)
		return true, nil
	}
	va.Status.ISOEjection = &afv1.ISOEjectionRecord{
		InstanceUUID: va.Status.VM.InstanceUUID, BIOSUUID: va.Status.VM.BIOSUUID, OwnerUID: string(va.UID),
		Datacenter: dc, DeviceKey: target.Key, ISOPath: target.ISOPath, StartedAt: metav1.NewTime(r.Opts.Clock.Now()),
	}
	setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, "ejection of "+target.ISOPath+" recorded", va.Generation)
	// The record is persisted by this pass's status write before anything touches the VM.
	s.requeueAfter(time.Millisecond)
	return true, nil
}

// stepEjection advances a recorded ejection by one step.
func (r *VsphereAgentReconciler) stepEjection(ctx context.Context, s *vmScope) error {
	va, rec := s.va, s.va.Status.ISOEjection
	now := r.Opts.Clock.Now()
	if rec.RetryAfter != nil && now.Before(rec.RetryAfter.Time) {
		s.requeueAfter(rec.RetryAfter.Sub(now))
		return nil
	}
	vs, err := r.client(ctx, s)
	if err != nil {
		return err
	}
	req := vsphere.EjectRequest{
		Datacenter: rec.Datacenter, InstanceUUID: rec.InstanceUUID, BIOSUUID: rec.BIOSUUID,
		Ownership: vsphere.Ownership{OwnerUID: rec.OwnerUID}, DeviceKey: rec.DeviceKey, ExpectedISOPath: rec.ISOPath,
		TaskRef: rec.TaskRef, QuestionID: rec.QuestionID, ConfirmQuestionID: rec.QuestionID,
	}
	res, err := vs.EjectISO(ctx, req)
	if err != nil {
		if vsphere.IsNotFound(err) {
			// The VM is gone: nothing left to eject.
			va.Status.ISOEjection = nil
			return nil
		}
		rec.Attempts++
		rec.LastError = err.Error()
		delay := backoffDelay(rec.Attempts)
		t := metav1.NewTime(now.Add(delay))
		rec.RetryAfter = &t
		metrics.ObserveISOOperation(metrics.ISOOpEject, metrics.ResultFailure)
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionFailed, fmt.Sprintf("attempt %d: %v; retrying in %s", rec.Attempts, err, delay), va.Generation)
		r.Recorder.Eventf(va, "Warning", "ISOEjectionFailed", "ejecting %s: %v", rec.ISOPath, err)
		s.requeueAfter(delay) // guard refusals (media changed, another question) included: retried, never forced
		return nil
	}
	rec.RetryAfter, rec.LastError = nil, ""
	switch res.State {
	case vsphere.EjectDone:
		if rec.QuestionID != "" {
			metrics.ObserveISOOperation(metrics.ISOOpAnswer, metrics.ResultSuccess)
		}
		metrics.ObserveISOOperation(metrics.ISOOpEject, metrics.ResultSuccess)
		r.Recorder.Eventf(va, "Normal", "ISOEjected", "ejected discovery ISO %s from VM %s", rec.ISOPath, va.Status.VM.Name)
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, true, afv1.ReasonEjected, "discovery ISO "+rec.ISOPath+" ejected", va.Generation)
		va.Status.ISOEjection = nil
	case vsphere.EjectQuestionPending:
		if rec.QuestionID != res.QuestionID {
			// Checkpoint the question ID first; the next pass answers exactly this question.
			rec.QuestionID = res.QuestionID
			r.Recorder.Eventf(va, "Normal", "CDROMLockQuestion", "guest locked the CD-ROM door; answering question %s after recording it", res.QuestionID)
		}
		rec.TaskRef = res.TaskRef
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, "CD-ROM lock question "+res.QuestionID+" recorded", va.Generation)
		s.requeueAfter(time.Millisecond)
	default:
		if res.TaskRef != "" {
			rec.TaskRef = res.TaskRef
		}
		setCondition(&va.Status.Conditions, afv1.ConditionISOEjected, false, afv1.ReasonEjectionInProgress, "ejecting "+rec.ISOPath, va.Generation)
		s.requeueAfter(ejectPollInterval)
	}
	return nil
}

func backoffDelay(attempts int32) time.Duration {
	d := ejectBackoffBase
	for i := int32(1); i < attempts && d < ejectBackoffMax; i++ {
		d *= 2
	}
	if d > ejectBackoffMax {
		d = ejectBackoffMax
	}
	return d
}

// machineDeleting: no new ejection for a Machine already being deleted.
func (r *VsphereAgentReconciler) machineDeleting(ctx context.Context, s *vmScope) (bool, error) {
	if s.va.Status.VM.MachineRef == "" {
		return false, nil
	}
	m := agents.New(agents.MachineGVK)
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.pool.Spec.ControlPlaneNamespace, Name: s.va.Status.VM.MachineRef}, m); err != nil {
		return true, nil // gone or unreadable: not a moment to start an ejection
	}
	return m.GetDeletionTimestamp() != nil, nil
}

// ejectionSupported refuses to start ejections while the served VsphereAgent CRD lacks
// status.isoEjection (CRDs older than the controller would prune the recovery record).
func (r *VsphereAgentReconciler) ejectionSupported(ctx context.Context) (bool, string) {
	r.crdCheckMu.Lock()
	defer r.crdCheckMu.Unlock()
	now := r.Opts.Clock.Now()
	if !r.crdCheckedAt.IsZero() && now.Sub(r.crdCheckedAt) < time.Minute {
		return r.crdOK, r.crdMsg
	}
	r.crdCheckedAt = now
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: "vsphereagents.agent-forge.containeroo.ch"}, crd); err != nil {
		r.crdOK, r.crdMsg = false, "cannot read the VsphereAgent CRD to confirm it preserves status.isoEjection: "+err.Error()
		return r.crdOK, r.crdMsg
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if m["name"] != afv1.GroupVersion.Version {
			continue
		}
		if _, found, _ := unstructured.NestedMap(m, "schema", "openAPIV3Schema", "properties", "status", "properties", "isoEjection"); found {
			r.crdOK, r.crdMsg = true, ""
			return true, ""
		}
	}
	r.crdOK, r.crdMsg = false, "the served VsphereAgent CRD is older than the controller and would drop status.isoEjection; apply the bundle's CRDs with the controller"
	return false, r.crdMsg
}
