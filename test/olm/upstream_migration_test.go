package olm

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
)

// upstreamShapes are the upstream operator's CRD generations a Helm user may have stored objects
// under, oldest first: each user upgrades in place (the chart's README: apply crds.yaml yourself), so
// the objects of every generation coexist.
var upstreamShapes = []struct{ name, crds, objects string }{
	{"v1.0.2", "upstream/crds-v1.0.2.yaml", "upstream/objects-v1.0.2.yaml"},
	{"v1.1.0", "upstream/crds-v1.1.0.yaml", "upstream/objects-v1.1.0.yaml"},
	{"main after v1.1.0", "upstream/crds-head.yaml", "upstream/objects-head.yaml"},
}

// storeUpstreamObjects starts an API server serving upstream's CRDs and stores every upstream-shaped
// object, reconciled status included, upgrading the CRDs in place between generations. It returns the
// client, the CRDs now served (upstream's newest) and every stored object as the server returns it.
func storeUpstreamObjects(t *testing.T) (client.Client, map[string]*apiextensionsv1.CustomResourceDefinition, []*unstructured.Unstructured) {
	t.Helper()
	first := loadCRDs(t, upstreamShapes[0].crds)
	c := startAPIServerWith(t, first)
	ctx := t.Context()
	uids := map[string]string{}
	served := first
	for i, shape := range upstreamShapes {
		if i > 0 {
			served = loadCRDs(t, shape.crds)
			olmcheck.ReplaceCRDs(ctx, t, c, served)
		}
		olmcheck.StoreObjects(ctx, t, c, olmcheck.LoadObjects(t, olmcheck.Testdata(t, shape.objects)), uids)
	}
	var stored []*unstructured.Unstructured
	for _, crd := range served {
		for _, obj := range olmcheck.ListStored(ctx, t, c, crd, "v1alpha1") {
			stored = append(stored, obj.DeepCopy())
		}
	}
	if len(stored) != 8 {
		t.Fatalf("stored %d upstream objects, want the fixtures' 8", len(stored))
	}
	return c, served, stored
}

// TestOLMCheckOfUpstreamObjects is OLM's rule applied to a cluster that ran the upstream operator: the
// CRDs of this project before #25 fail it on the very fields issue #25 names (so the check can fail),
// this bundle's CRDs pass it (and CEL and list-type validation beyond it), and once applied, every
// upstream object is listed and decoded by our typed client with nothing upstream wrote lost.
func TestOLMCheckOfUpstreamObjects(t *testing.T) {
	c, served, stored := storeUpstreamObjects(t)
	ctx := t.Context()

	t.Run("CRDs before #25 fail the check", func(t *testing.T) {
		before := loadCRDs(t, "crds-0.2.0-before-25.yaml")
		var problems []string
		for name, crd := range before {
			problems = append(problems, olmcheck.Check(ctx, t, c, served[name], crd)...)
		}
		report := strings.Join(problems, "\n")
		for _, want := range []string{
			"status.ownedVMs[0].agentRef: Invalid value: \"object\"", // object upstream, string before
			"status.vm.machineRef: Invalid value: \"object\"",
			"status.plannedActions[0].action: Required value",
			"Unsupported value: \"Orphaned\"",
			"status.isoEjection.instanceUUID: Required value",
			"spec.agent.role: Unsupported value: \"infra\"",
			"spec.template.numCPUs: Invalid value: 1",
			"spec.vsphere.scsiType: Unsupported value: \"scsi\"",
			"spec.vsphere.vmTags: Too many: 40",
		} {
			if !strings.Contains(report, want) {
				t.Errorf("the check of the old CRDs does not report %q; it reported:\n%s", want, report)
			}
		}
		if len(problems) < 6 {
			t.Errorf("want every reconciled upstream pool and VsphereAgent refused, got %d refusals:\n%s", len(problems), report)
		}
	})

	next := loadCurrentBundle(t)
	t.Run("this bundle's CRDs pass the check", func(t *testing.T) {
		for name, crd := range next.crds {
			if problems := olmcheck.Check(ctx, t, c, served[name], crd); len(problems) > 0 {
				t.Errorf("OLM would refuse %s:\n%s", name, strings.Join(problems, "\n"))
			}
			if problems := olmcheck.StrictCheck(ctx, t, c, served[name], crd); len(problems) > 0 {
				t.Errorf("CEL or list-type validation of %s refuses stored upstream objects:\n%s", name, strings.Join(problems, "\n"))
			}
		}
	})
	if t.Failed() {
		return
	}

	olmcheck.ReplaceCRDs(ctx, t, c, next.crds)
	waitUntilOurSchemaServed(ctx, t, c)
	t.Run("upstream objects decode with nothing lost", func(t *testing.T) {
		assertNothingLost(ctx, t, c, stored)
		assertTypedDecode(ctx, t, c)
	})
	t.Run("a status write of our typed client keeps upstream's records", func(t *testing.T) {
		vas := &afv1.VsphereAgentList{}
		if err := c.List(ctx, vas); err != nil {
			t.Fatal(err)
		}
		for i := range vas.Items {
			if err := c.Status().Update(ctx, &vas.Items[i]); err != nil {
				t.Fatalf("status write of VsphereAgent %s under our CRD: %v", vas.Items[i].Name, err)
			}
		}
		pools := &afv1.VsphereAgentPoolList{}
		if err := c.List(ctx, pools); err != nil {
			t.Fatal(err)
		}
		for i := range pools.Items {
			if err := c.Status().Update(ctx, &pools.Items[i]); err != nil {
				t.Fatalf("status write of pool %s under our CRD: %v", pools.Items[i].Name, err)
			}
		}
		assertNothingLost(ctx, t, c, stored)
	})
}

// waitUntilOurSchemaServed waits until the API server serves our VsphereAgent schema: a dry-run status
// write of status.vm.agentName (unknown to upstream's schema, which prunes it) keeps the field.
func waitUntilOurSchemaServed(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	poll(ctx, t, "our VsphereAgent schema served", func(ctx context.Context) (bool, error) {
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(afv1.GroupVersion.WithKind("VsphereAgent"))
		if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: "demo-workers-7c9d4-h2x8k"}, probe); err != nil {
			return false, err
		}
		if err := unstructured.SetNestedField(probe.Object, "probe", "status", "vm", "agentName"); err != nil {
			return false, err
		}
		if err := c.Status().Update(ctx, probe, client.DryRunAll); err != nil {
			return false, nil // a conflict or a schema in transition: ask again
		}
		_, found, _ := unstructured.NestedString(probe.Object, "status", "vm", "agentName")
		return found, nil
	})
}

// assertNothingLost reads every stored object again and fails for each spec or status value the
// upstream operator wrote that is gone or changed (our CRD's defaults may add values).
func assertNothingLost(ctx context.Context, t *testing.T, c client.Client, stored []*unstructured.Unstructured) {
	t.Helper()
	for _, before := range stored {
		after := &unstructured.Unstructured{}
		after.SetGroupVersionKind(before.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
			t.Fatal(err)
		}
		if lost := olmcheck.LostLeaves(before, after); len(lost) > 0 {
			t.Errorf("%s %s lost what upstream wrote:\n%s", before.GetKind(), before.GetName(), strings.Join(lost, "\n"))
		}
	}
}

// assertTypedDecode lists both kinds with our typed client and checks that upstream's records land in
// the fields meant for them.
func assertTypedDecode(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	pools := &afv1.VsphereAgentPoolList{}
	if err := c.List(ctx, pools); err != nil {
		t.Fatalf("our client cannot list upstream pools: %v", err)
	}
	vas := &afv1.VsphereAgentList{}
	if err := c.List(ctx, vas); err != nil {
		t.Fatalf("our client cannot list upstream VsphereAgents: %v", err)
	}
	if len(pools.Items) != 3 || len(vas.Items) != 5 {
		t.Fatalf("listed %d pools and %d VsphereAgents, want 3 and 5", len(pools.Items), len(vas.Items))
	}
	uid := map[string]string{}
	for _, va := range vas.Items {
		uid[va.Name] = string(va.UID)
	}
	byName := map[string]afv1.VsphereAgentPool{}
	for _, p := range pools.Items {
		byName[p.Name] = p
	}

	workers := byName["demo-workers"].Status
	if len(workers.OwnedVMs) != 3 || workers.OwnedVMs[0].UpstreamAgentRef == nil || workers.OwnedVMs[0].UpstreamMachineRef == nil {
		t.Fatalf("demo-workers ownedVMs lost upstream's references: %+v", workers.OwnedVMs)
	}
	vm0 := workers.OwnedVMs[0]
	if vm0.UpstreamAgentRef.Name != "4213a1c2-5d6e-7f80-91a2-b3c4d5e6f701" || vm0.UpstreamMachineRef.Namespace != "clusters-demo" ||
		vm0.BIOSUUID == "" || vm0.MACAddress == "" || vm0.Phase != afv1.VMPhaseBound || vm0.AgentName != "" {
		t.Errorf("demo-workers ownedVMs[0] decoded as %+v", vm0)
	}
	if workers.OwnedVMs[2].Phase != afv1.VMPhaseOrphaned {
		t.Errorf("phase Orphaned decoded as %q", workers.OwnedVMs[2].Phase)
	}
	if len(workers.PlannedActions) != 1 || workers.PlannedActions[0].Type != "Noop" || workers.PlannedActions[0].Action != "" {
		t.Errorf("upstream's planned action decoded as %+v", workers.PlannedActions)
	}

	infra := byName["demo-infra"]
	if got := infra.Status.OwnedVMs[0]; got.OwnerUID != uid[got.Name] || got.Source != "VsphereAgent" {
		t.Errorf("1.1.0 ownedVMs[0] ownerUID/source decoded as %q/%q, want %q/VsphereAgent", got.OwnerUID, got.Source, uid[got.Name])
	}
	if got := infra.Status.OwnedVMs[1].Source; got != "DiscoveredAgent" {
		t.Errorf("a discovered VM's source decoded as %q", got)
	}
	if infra.Spec.Agent.Role != "infra" || infra.Spec.Template.NumCPUs != 1 || infra.Spec.Template.MemoryMiB != 6142 ||
		infra.Spec.ISO.CheckInterval == nil || infra.Spec.ISO.CheckInterval.Duration != 30*time.Second {
		t.Errorf("upstream's spec values decoded as %+v", infra.Spec)
	}

	for _, va := range vas.Items {
		if va.Status.VM.UpstreamAgentRef == nil && va.Labels["agent-forge.containeroo.ch/created-for"] != "adopted" {
			t.Errorf("VsphereAgent %s lost status.vm.agentRef: %+v", va.Name, va.Status.VM)
		}
		if va.Name != "demo-canary-8d2f1-p4x7z" {
			continue
		}
		rec := va.Status.ISOEjection
		if rec == nil || rec.VMName != va.Name || rec.InstanceUUID != "" || rec.OwnerUID != string(va.UID) || rec.DeviceKey != 3002 ||
			rec.DisconnectStarted == nil || string(rec.DisconnectStarted.Raw) != "true" || !rec.StartedAt.Time.Equal(time.Date(2026, 7, 20, 8, 5, 0, 0, time.UTC)) {
			t.Errorf("upstream's ejection record decoded as %+v", rec)
		}
		if va.Status.VM.OwnerUID != string(va.UID) {
			t.Errorf("status.vm.ownerUID decoded as %q, want %q", va.Status.VM.OwnerUID, va.UID)
		}
	}
}
