package olm

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// TestUpgradeKeepsISOEjectionRecord installs the CRDs of an older schema (the upgrade fixture in testdata: the
// 0.2.0 CRDs without what 0.2.0 added, never a released bundle and never in catalog/), stores a VsphereAgent whose
// status.isoEjection holds an in-flight ejection, upgrades to this bundle's CRDs the way OLM does (update
// in place) and shows the record survives, also across a status write made under the new schema. A
// pruned record would make a restarted controller lose track of a CD-ROM it half ejected.
func TestUpgradeKeepsISOEjectionRecord(t *testing.T) {
	next := loadCurrentBundle(t)
	objs := loadUpgradeFixture(t)
	prevCRDs, err := catalogBundleCRDs(objs, upgradeFixtureBundle)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := prevCRDs["vsphereagents.agent-forge.containeroo.ch"]; !ok {
		t.Fatalf("fixture bundle %s has no VsphereAgent CRD", upgradeFixtureBundle)
	}
	c := startAPIServerWith(t, prevCRDs)
	ctx := t.Context()
	ensureNamespace(ctx, t, c, "clusters")

	va := &afv1.VsphereAgent{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-worker-7k2xq", Namespace: "clusters"},
		Spec:       afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: "workers"}},
	}
	if err := c.Create(ctx, va); err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	record := &afv1.ISOEjectionRecord{
		InstanceUUID: string(va.UID),
		BIOSUUID:     "4213c2a4-0bd3-5e7c-a77a-4b8c2f3d9e10",
		OwnerUID:     string(va.UID),
		Datacenter:   "DC0",
		DeviceKey:    3002,
		ISOPath:      "[LocalDS_0] agent-forge/clusters/workers/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.iso",
		StartedAt:    started,
		TaskRef:      "task-1207",
		QuestionID:   "_vmx1",
		Attempts:     1,
	}
	va.Status.VM = afv1.VMStatus{Name: va.Name, InstanceUUID: string(va.UID), Phase: afv1.VMPhaseBound, Datacenter: "DC0"}
	va.Status.ISOEjection = record.DeepCopy()
	meta.SetStatusCondition(&va.Status.Conditions, metav1.Condition{
		Type: afv1.ConditionISOEjected, Status: metav1.ConditionFalse, Reason: afv1.ReasonEjectionInProgress,
		Message: "waiting for the CD-ROM lock question", LastTransitionTime: started,
	})
	if err := c.Status().Update(ctx, va); err != nil {
		t.Fatal(err)
	}
	assertRecord(ctx, t, c, va, record, "under the previous CRDs")
	if newSchemaServed(ctx, t, c, va) {
		t.Fatalf("the previous CRDs from %s already serve status.vm.createdAt; the upgrade would prove nothing", upgradeFixtureBundle)
	}

	upgradeCRDs(ctx, t, c, next)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return newSchemaServed(ctx, t, c, va), nil
	}); err != nil {
		t.Fatalf("the API server never served the new VsphereAgent schema: %v", err)
	}
	assertRecord(ctx, t, c, va, record, "after the CRD upgrade")

	// A status write by the new controller goes through the new schema's pruning.
	got := &afv1.VsphereAgent{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(va), got); err != nil {
		t.Fatal(err)
	}
	created := metav1.NewTime(started.Add(-time.Hour))
	got.Status.VM.CreatedAt = &created
	got.Status.ISOEjection.Attempts = 2
	if err := c.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	record.Attempts = 2
	after := assertRecord(ctx, t, c, va, record, "after a status write under the new CRDs")
	if after.Status.VM.CreatedAt == nil || !after.Status.VM.CreatedAt.Equal(&created) {
		t.Errorf("status.vm.createdAt (new in this version) was not stored: %v", after.Status.VM.CreatedAt)
	}
}

// upgradeCRDs replaces the served CRDs with the bundle's, as OLM does when it installs the new CSV.
func upgradeCRDs(ctx context.Context, t *testing.T, c client.Client, b *bundle) {
	t.Helper()
	for name, want := range b.crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Fatal(err)
		}
		crd.Spec = want.Spec
		if err := c.Update(ctx, crd); err != nil {
			t.Fatalf("updating CRD %s to the new bundle: %v", name, err)
		}
	}
}

// newSchemaServed says whether the API server serves the new VsphereAgent schema: a dry-run status write
// carrying status.vm.createdAt (added after the previous version) keeps the field instead of pruning it.
// Unstructured, so the answer is exactly what the server returned (a typed decode merges into the request).
func newSchemaServed(ctx context.Context, t *testing.T, c client.Client, va *afv1.VsphereAgent) bool {
	t.Helper()
	probe := &unstructured.Unstructured{}
	probe.SetGroupVersionKind(afv1.GroupVersion.WithKind("VsphereAgent"))
	if err := c.Get(ctx, client.ObjectKeyFromObject(va), probe); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(probe.Object, "2026-06-01T00:00:00Z", "status", "vm", "createdAt"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, probe, client.DryRunAll); err != nil {
		return false // a conflict or a schema in transition: ask again
	}
	_, found, err := unstructured.NestedString(probe.Object, "status", "vm", "createdAt")
	return err == nil && found
}

func assertRecord(ctx context.Context, t *testing.T, c client.Client, va *afv1.VsphereAgent, want *afv1.ISOEjectionRecord, when string) *afv1.VsphereAgent {
	t.Helper()
	got := &afv1.VsphereAgent{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(va), got); err != nil {
		t.Fatal(err)
	}
	switch {
	case got.Status.ISOEjection == nil:
		t.Fatalf("status.isoEjection is gone %s", when)
	case !equality.Semantic.DeepEqual(got.Status.ISOEjection, want):
		t.Fatalf("status.isoEjection changed %s:\n got %+v\nwant %+v", when, *got.Status.ISOEjection, *want)
	}
	if cond := meta.FindStatusCondition(got.Status.Conditions, afv1.ConditionISOEjected); cond == nil || cond.Reason != afv1.ReasonEjectionInProgress {
		t.Fatalf("ISOEjected condition lost %s: %+v", when, cond)
	}
	return got
}
