//go:build linux

package realolm

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// OLM retries a failing InstallPlan for --install-plan-retry-timeout (1 minute by default) before it
	// fails it; the refusal below needs the terminal state sooner.
	w := startOLMWorld(ctx, t, "--install-plan-retry-timeout=15s")
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

	// The other records of that release: the pool's, a bound VM's and an adopted upstream VM's.
	stored := w.storeRecords(ctx, t)

	// The new head of the channel, published where the CatalogSource points.
	entries := []any{map[string]any{"name": prevName}, map[string]any{"name": info.csvName, "replaces": prevName}}
	dirNext := writeCatalog(ctx, t, w.opm, info, entries, prev, cur)
	_, addrNext := ServeCatalog(t, w.opm, dirNext)
	w.moveCatalog(ctx, t, addrNext)
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
	// A status write of the new release goes through the new schema's pruning and keeps the record.
	created := metav1.NewTime(started.Add(-time.Hour))
	got.Status.VM.CreatedAt = &created
	got.Status.ISOEjection.Attempts = 2
	if err := w.c.Status().Update(ctx, got); err != nil {
		t.Fatalf("a status write under the new CRDs: %v", err)
	}
	record.Attempts = 2
	after := &afv1.VsphereAgent{}
	if err := w.c.Get(ctx, client.ObjectKeyFromObject(va), after); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(after.Status.ISOEjection, record) || after.Status.VM.CreatedAt == nil || !after.Status.VM.CreatedAt.Equal(&created) {
		t.Errorf("after a status write under the new CRDs: isoEjection %+v, vm.createdAt %v", after.Status.ISOEjection, after.Status.VM.CreatedAt)
	}
	w.assertRecordsKept(ctx, t, stored, "after OLM's upgrade")

	// A next head whose CRD breaks the stored objects: OLM itself refuses it, the installed release stays.
	bad, badName := breakingBundle(t, cur, info.csvName)
	entries = append(entries, map[string]any{"name": badName, "replaces": info.csvName})
	dirBad := writeCatalog(ctx, t, w.opm, info, entries, prev, cur, bad)
	_, addrBad := ServeCatalog(t, w.opm, dirBad)
	w.moveCatalog(ctx, t, addrBad)
	msg := w.assertRefused(ctx, t, badName, "vsphereagents.agent-forge.containeroo.ch",
		[]string{"status.vm.phase", `Unsupported value: "Bound"`})
	t.Logf("OLM refused %s: %s", badName, msg)
	// What OLM v0.46.0 does besides failing the plan: the plan's CSV step has already created the new CSV,
	// which its requirements keep Pending (its CRD was never updated), and the installed CSV is Replacing but
	// stays, with its Deployment: the installed release keeps running. A new CSV only replaces the old one
	// once it succeeds.
	if phase, err := w.csvPhase(ctx, info.csvName); err != nil || (phase != "Succeeded" && phase != "Replacing") {
		t.Errorf("after the refusal the installed CSV %s is %q (%v), want Succeeded or Replacing", info.csvName, phase, err)
	}
	if phase, err := w.csvPhase(ctx, badName); err == nil && phase == "Succeeded" {
		t.Errorf("the refused CSV %s succeeded", badName)
	} else {
		t.Logf("the refused CSV %s: phase %q (%v)", badName, phase, err)
	}
	var deps appsv1.DeploymentList
	if err := w.c.List(ctx, &deps, client.InNamespace(operatorNamespace)); err != nil || len(deps.Items) != 1 {
		t.Errorf("after the refusal %d operator Deployments (%v), want the installed release's one", len(deps.Items), err)
	}
	if err := w.c.Get(ctx, client.ObjectKey{Name: "vsphereagents.agent-forge.containeroo.ch"}, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		phase := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["vm"].Properties["phase"]
		if !slices.ContainsFunc(phase.Enum, func(e apiextensionsv1.JSON) bool { return string(e.Raw) == `"Bound"` }) {
			t.Errorf("after the refusal the served CRD %s no longer accepts status.vm.phase Bound", v.Name)
		}
	}
	w.assertRecordsKept(ctx, t, stored, "after OLM's refusal")
}
