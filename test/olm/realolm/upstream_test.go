//go:build linux

package realolm

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
)

// upstreamShapes are the upstream Helm operator's CRD generations a user may have stored objects under,
// oldest first (test/olm/testdata/upstream): each upgrade applied the next crds.yaml in place, so the
// objects of every generation coexist.
var upstreamShapes = []struct{ crds, objects string }{
	{"upstream/crds-v1.0.2.yaml", "upstream/objects-v1.0.2.yaml"},
	{"upstream/crds-v1.1.0.yaml", "upstream/objects-v1.1.0.yaml"},
	{"upstream/crds-head.yaml", "upstream/objects-head.yaml"},
}

// storeUpstreamObjects makes the cluster one that ran the upstream operator before OLM installs ours: its CRDs
// (created, then applied in place generation by generation) and every upstream-shaped object with its
// reconciled status. It returns the objects as the API server stored them.
func (w *olmWorld) storeUpstreamObjects(ctx context.Context, t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	uids := map[string]string{}
	var served map[string]*apiextensionsv1.CustomResourceDefinition
	for i, shape := range upstreamShapes {
		served = olmcheck.LoadCRDs(t, olmcheck.Testdata(t, shape.crds))
		if i == 0 {
			for _, crd := range served {
				if err := w.c.Create(ctx, crd.DeepCopy()); err != nil {
					t.Fatalf("creating upstream's CRD %s: %v", crd.Name, err)
				}
			}
		}
		olmcheck.ReplaceCRDs(ctx, t, w.c, served) // waits until each is served
		olmcheck.StoreObjects(ctx, t, w.c, olmcheck.LoadObjects(t, olmcheck.Testdata(t, shape.objects)), uids)
	}
	var stored []*unstructured.Unstructured
	for _, crd := range served {
		for _, obj := range olmcheck.ListStored(ctx, t, w.c, crd, "v1alpha1") {
			stored = append(stored, obj.DeepCopy())
		}
	}
	if len(stored) != 8 {
		t.Fatalf("stored %d upstream objects, want the fixtures' 8", len(stored))
	}
	return stored
}

// assertUpstreamKept: after OLM replaced upstream's CRDs with ours (its own check of the stored objects
// passed), every upstream object reads back with nothing upstream wrote lost, our typed client decodes them,
// and a status write of our typed client (what the manager does) keeps upstream's records too.
func (w *olmWorld) assertUpstreamKept(ctx context.Context, t *testing.T, stored []*unstructured.Unstructured) {
	t.Helper()
	lost := func(when string) {
		for _, before := range stored {
			after := &unstructured.Unstructured{}
			after.SetGroupVersionKind(before.GroupVersionKind())
			if err := w.c.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
				t.Fatal(err)
			}
			if l := olmcheck.LostLeaves(before, after); len(l) > 0 {
				t.Errorf("%s %s lost what upstream wrote %s:\n%s", before.GetKind(), before.GetName(), when, strings.Join(l, "\n"))
			}
		}
	}
	lost("once OLM installed our CRDs")
	var vas afv1.VsphereAgentList
	if err := w.c.List(ctx, &vas); err != nil {
		t.Fatalf("our typed client cannot list upstream VsphereAgents: %v", err)
	}
	var pools afv1.VsphereAgentPoolList
	if err := w.c.List(ctx, &pools); err != nil {
		t.Fatalf("our typed client cannot list upstream pools: %v", err)
	}
	if len(pools.Items) != 3 || len(vas.Items) != 5 {
		t.Fatalf("listed %d pools and %d VsphereAgents, want 3 and 5", len(pools.Items), len(vas.Items))
	}
	for i := range vas.Items {
		if vas.Items[i].Status.VM.UpstreamAgentRef == nil && vas.Items[i].Labels[afv1.LabelUpstreamCreatedFor] != afv1.UpstreamCreatedForAdopted {
			t.Errorf("VsphereAgent %s decoded without upstream's status.vm.agentRef", vas.Items[i].Name)
		}
		if err := w.c.Status().Update(ctx, &vas.Items[i]); err != nil {
			t.Fatalf("status write of VsphereAgent %s under our CRD: %v", vas.Items[i].Name, err)
		}
	}
	for i := range pools.Items {
		if err := w.c.Status().Update(ctx, &pools.Items[i]); err != nil {
			t.Fatalf("status write of pool %s under our CRD: %v", pools.Items[i].Name, err)
		}
	}
	lost("after a status write of our typed client")
}
