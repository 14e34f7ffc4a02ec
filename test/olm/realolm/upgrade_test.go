//go:build linux

package realolm

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// previousBundleFile is the previous release's catalog entry that test/olm keeps as its upgrade fixture.
const previousBundleFile = "previous-bundle-v0.1.0.yaml"

// TestOLMUpgradesThroughTheChannel: OLM installs the previous bundle (the channel's head then), a
// VsphereAgent carrying an in-flight ISO ejection record is stored under its CRDs, the channel's new head
// (the working tree's bundle, replacing the previous one) is published by moving the CatalogSource's address
// to a second opm serve, and OLM itself upgrades: its CRD safety check against the stored objects passes,
// the new CSV succeeds and replaces the old one, and the record reads back unchanged.
func TestOLMUpgradesThroughTheChannel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute) // includes a cold OLM build
	defer cancel()
	w := startOLMWorld(ctx, t)
	cur, info := currentBundle(ctx, t, w.opm)
	w.info = info
	prev := fixtureBundle(t, previousBundleFile)
	prevName, _ := prev["name"].(string)
	if prevName == "" || prevName == info.csvName {
		t.Fatalf("fixture %s names bundle %q; want a release before %s", previousBundleFile, prevName, info.csvName)
	}
	dirPrev := writeCatalog(ctx, t, w.opm, info, []any{map[string]any{"name": prevName}}, prev)
	_, addrPrev := ServeCatalog(t, w.opm, dirPrev)
	w.playDeploymentController(t, operatorNamespace)
	w.subscribe(ctx, t, addrPrev, nil)
	w.waitFor(ctx, t, installTimeout, "CSV "+prevName+" (the previous release) is Succeeded", func() (bool, error) {
		phase, err := w.csvPhase(ctx, prevName)
		return phase == "Succeeded", err
	})

	// A record written under the previous release's CRDs.
	va := &afv1.VsphereAgent{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-worker-7k2xq", Namespace: poolNamespace},
		Spec:       afv1.VsphereAgentSpec{PoolRef: afv1.LocalObjectReference{Name: "workers"}},
	}
	if err := w.c.Create(ctx, va); err != nil {
		t.Fatalf("creating a VsphereAgent under %s's CRDs: %v", prevName, err)
	}
	started := metav1.NewTime(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	record := &afv1.ISOEjectionRecord{
		InstanceUUID: string(va.UID), BIOSUUID: "4213c2a4-0bd3-5e7c-a77a-4b8c2f3d9e10", OwnerUID: string(va.UID),
		Datacenter: "DC0", DeviceKey: 3002, StartedAt: started, TaskRef: "task-1207", QuestionID: "_vmx1", Attempts: 1,
		ISOPath: "[LocalDS_0] agent-forge/clusters/workers/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.iso",
	}
	va.Status.VM = afv1.VMStatus{Name: va.Name, InstanceUUID: string(va.UID), Phase: afv1.VMPhaseBound, Datacenter: "DC0"}
	va.Status.ISOEjection = record.DeepCopy()
	if err := w.c.Status().Update(ctx, va); err != nil {
		t.Fatalf("writing the ejection record under %s's CRDs: %v", prevName, err)
	}

	// The new head of the channel, published where the CatalogSource points.
	entries := []any{map[string]any{"name": prevName}, map[string]any{"name": info.csvName, "replaces": prevName}}
	dirNext := writeCatalog(ctx, t, w.opm, info, entries, prev, cur)
	_, addrNext := ServeCatalog(t, w.opm, dirNext)
	cs := &unstructured.Unstructured{}
	cs.SetGroupVersionKind(olmGVK("v1alpha1", "CatalogSource"))
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: catalogSourceName}, cs); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cs.DeepCopy())
	if err := unstructured.SetNestedField(cs.Object, addrNext, "spec", "address"); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Patch(ctx, cs, patch); err != nil {
		t.Fatalf("moving the CatalogSource to the new catalog: %v", err)
	}
	started2 := time.Now()
	w.waitFor(ctx, t, installTimeout, "CSV "+info.csvName+" replaces "+prevName+" and is Succeeded", func() (bool, error) {
		phase, err := w.csvPhase(ctx, info.csvName)
		return phase == "Succeeded", err
	})
	w.waitFor(ctx, t, installTimeout, "OLM deletes the replaced CSV "+prevName, func() (bool, error) {
		_, err := w.csvPhase(ctx, prevName)
		return apierrors.IsNotFound(err), err
	})
	t.Logf("upgraded %s -> %s in %s", prevName, info.csvName, time.Since(started2).Round(time.Second))

	// OLM replaced the CRDs: the new release's status.vm.createdAt is served (the previous CRDs lack it).
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := w.c.Get(ctx, client.ObjectKey{Name: "vsphereagents.agent-forge.containeroo.ch"}, crd); err != nil {
		t.Fatal(err)
	}
	served := false
	for _, v := range crd.Spec.Versions {
		if v.Storage && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			_, served = v.Schema.OpenAPIV3Schema.Properties["status"].Properties["vm"].Properties["createdAt"]
		}
	}
	if !served {
		t.Errorf("after the upgrade the VsphereAgent CRD does not serve status.vm.createdAt: OLM did not install the new CRDs")
	}

	got := &afv1.VsphereAgent{}
	if err := w.c.Get(ctx, client.ObjectKeyFromObject(va), got); err != nil {
		t.Fatalf("reading the VsphereAgent after the upgrade: %v", err)
	}
	if got.Status.ISOEjection == nil || !equality.Semantic.DeepEqual(got.Status.ISOEjection, record) {
		t.Errorf("the ejection record changed across OLM's upgrade:\ngot  %+v\nwant %+v", got.Status.ISOEjection, record)
	}
}
