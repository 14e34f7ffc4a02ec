//go:build linux

package realolm

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// storeRecords writes, under the CRDs installed now (the previous release's), the records besides the
// ejection record that a cluster of that release holds: a pool whose status records its VM (ownedVMs, the
// demand counters, conditions), the VsphereAgent of that VM with its binding record, and a VsphereAgent
// carrying the adoption record of an upstream VM (upstream's labels, VM-name annotation and finalizer, our
// Adopted condition). It returns each object as the API server stored it (what that schema kept), for
// assertRecordsKept.
func (w *olmWorld) storeRecords(ctx context.Context, t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	at := metav1.NewTime(time.Date(2026, 6, 2, 8, 0, 0, 0, time.UTC))
	// The shipped sample's spec, as a user writes it.
	pool, err := harness.LoadSamplePool()
	if err != nil {
		t.Fatal(err)
	}
	// Our types carry fields the previous schema lacks (zero values included): that schema drops them, as
	// the previous release never wrote them.
	ignore := client.FieldValidation(metav1.FieldValidationIgnore)
	if err := w.c.Create(ctx, pool, ignore); err != nil {
		t.Fatalf("creating a pool under the previous CRDs: %v", err)
	}
	bound := &afv1.VsphereAgent{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-worker-b8m4t", Namespace: poolNamespace},
		Spec:       afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: pool.Name}},
	}
	adopted := &afv1.VsphereAgent{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-workers-7c9d4-h2x8k", Namespace: poolNamespace,
			Labels:      map[string]string{afv1.LabelUpstreamPool: pool.Name, afv1.LabelUpstreamCreatedFor: "agent-machine"},
			Annotations: map[string]string{afv1.AnnotationUpstreamVMName: "demo-workers-7c9d4-h2x8k"},
			Finalizers:  []string{afv1.FinalizerUpstreamVsphereAgent}},
		Spec: afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: pool.Name}},
	}
	for _, va := range []*afv1.VsphereAgent{bound, adopted} {
		if err := w.c.Create(ctx, va, ignore); err != nil {
			t.Fatalf("creating VsphereAgent %s under the previous CRDs: %v", va.Name, err)
		}
	}
	bound.Status.VM = afv1.VMStatus{Name: bound.Name, InstanceUUID: string(bound.UID), BIOSUUID: "4213b7f0-6a1e-2c3d-9e8f-0a1b2c3d4e5f",
		MACAddress: "00:50:56:a1:b2:c3", Phase: afv1.VMPhaseBound, Datacenter: "DC0", LastTransitionTime: &at}
	meta.SetStatusCondition(&bound.Status.Conditions, metav1.Condition{Type: "VMReady", Status: metav1.ConditionTrue,
		Reason: "VMRunning", Message: "the VM is powered on", LastTransitionTime: at})
	adopted.Status.VM = afv1.VMStatus{Name: adopted.Name, BIOSUUID: "4213a1c2-5d6e-7f80-91a2-b3c4d5e6f701",
		MACAddress: "00:50:56:a1:00:01", Phase: afv1.VMPhaseBound, Datacenter: "DC0", LastTransitionTime: &at}
	meta.SetStatusCondition(&adopted.Status.Conditions, metav1.Condition{Type: afv1.ConditionAdopted, Status: metav1.ConditionTrue,
		Reason: afv1.ReasonAdoptionSucceeded, Message: "BIOS UUID, MAC and VM name agree; the VM carries our marker", LastTransitionTime: at})
	for _, va := range []*afv1.VsphereAgent{bound, adopted} {
		if err := w.c.Status().Update(ctx, va, ignore); err != nil {
			t.Fatalf("writing VsphereAgent %s's status under the previous CRDs: %v", va.Name, err)
		}
	}
	pool.Status.ObservedGeneration = pool.Generation
	pool.Status.DesiredReplicas, pool.Status.AgentMachines, pool.Status.BoundAgents = 2, 2, 2
	pool.Status.OwnedVMs = []afv1.OwnedVM{
		{Name: bound.Name, InstanceUUID: string(bound.UID), BIOSUUID: bound.Status.VM.BIOSUUID, MACAddress: bound.Status.VM.MACAddress, Phase: afv1.VMPhaseBound},
		{Name: adopted.Name, BIOSUUID: adopted.Status.VM.BIOSUUID, MACAddress: adopted.Status.VM.MACAddress, Phase: afv1.VMPhaseBound},
	}
	meta.SetStatusCondition(&pool.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue,
		Reason: "PoolReady", Message: "2 of 2 workers bound", LastTransitionTime: at})
	if err := w.c.Status().Update(ctx, pool, ignore); err != nil {
		t.Fatalf("writing the pool's status under the previous CRDs: %v", err)
	}

	var stored []*unstructured.Unstructured
	for _, o := range []client.Object{pool, bound, adopted} {
		u := &unstructured.Unstructured{}
		gvk, err := w.c.GroupVersionKindFor(o)
		if err != nil {
			t.Fatal(err)
		}
		u.SetGroupVersionKind(gvk)
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := unstructured.NestedMap(u.Object, "status"); !ok {
			t.Fatalf("%s %s has no status under the previous CRDs: the records were not stored", gvk.Kind, o.GetName())
		}
		stored = append(stored, u)
	}
	return stored
}

// assertRecordsKept reads every stored object again (as the new CRDs serve it) and fails for each value the
// previous release stored that is gone or changed; our typed client must decode them too.
func (w *olmWorld) assertRecordsKept(ctx context.Context, t *testing.T, stored []*unstructured.Unstructured, when string) {
	t.Helper()
	for _, before := range stored {
		after := &unstructured.Unstructured{}
		after.SetGroupVersionKind(before.GroupVersionKind())
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
			t.Errorf("%s %s %s: %v", before.GetKind(), before.GetName(), when, err)
			continue
		}
		if lost := olmcheck.LostLeaves(before, after); len(lost) > 0 {
			t.Errorf("%s %s lost records %s:\n%s", before.GetKind(), before.GetName(), when, strings.Join(lost, "\n"))
		}
	}
	var pools afv1.VsphereAgentPoolList
	var vas afv1.VsphereAgentList
	if err := w.c.List(ctx, &pools, client.InNamespace(poolNamespace)); err != nil {
		t.Errorf("our typed client cannot list pools %s: %v", when, err)
	}
	if err := w.c.List(ctx, &vas, client.InNamespace(poolNamespace)); err != nil {
		t.Errorf("our typed client cannot list VsphereAgents %s: %v", when, err)
	}
	for _, va := range vas.Items {
		if va.Name == "demo-workers-7c9d4-h2x8k" {
			if c := meta.FindStatusCondition(va.Status.Conditions, afv1.ConditionAdopted); c == nil || c.Reason != afv1.ReasonAdoptionSucceeded ||
				va.Labels[afv1.LabelUpstreamCreatedFor] != "agent-machine" || va.Annotations[afv1.AnnotationUpstreamVMName] != va.Name {
				t.Errorf("the adoption record decoded %s as %+v, labels %v", when, c, va.Labels)
			}
		}
	}
}
