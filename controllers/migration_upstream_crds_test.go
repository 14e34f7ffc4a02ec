package controllers_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ktypes "k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/olm/olmcheck"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/testenv"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// The cluster an upstream Helm install leaves, built on the suite's own API server: upstream's CRDs
// served in place of ours, its objects stored as upstream wrote them (unstructured: our typed client
// cannot decode them until our CRDs are served), and the CRDs handed back to ours afterwards.

// crdClient is an admin client that also knows CustomResourceDefinitions.
func crdClient() client.Client {
	GinkgoHelper()
	scheme := testenv.Scheme()
	Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// upstreamCRDs reads upstream's CRDs of one release from test/olm/testdata/upstream.
func upstreamCRDs(file string) map[string]*apiextensionsv1.CustomResourceDefinition {
	GinkgoHelper()
	return olmcheck.LoadCRDs(GinkgoT(), olmcheck.Testdata(GinkgoT(), "upstream", file))
}

// installUpstreamCRDs deletes our CRDs (every stored pool and VsphereAgent with them) and creates
// upstream's of the same names: a cluster that ran only upstream.
func installUpstreamCRDs(ctx context.Context, c client.Client, crds map[string]*apiextensionsv1.CustomResourceDefinition) {
	GinkgoHelper()
	clearStoredObjects(ctx, c)
	for name, crd := range crds {
		olmcheck.ReinstallCRD(ctx, GinkgoT(), c, name, crd)
	}
}

// restoreOurCRDs puts back the CRDs envtest installed (config/crd/bases) afresh, whatever the spec left
// served, so later specs run on our schema.
func restoreOurCRDs(c client.Client) {
	ctx := context.Background()
	clearStoredObjects(ctx, c)
	for name, crd := range olmcheck.BaseCRDs(GinkgoT()) {
		olmcheck.ReinstallCRD(ctx, GinkgoT(), c, name, crd)
	}
}

// clearStoredObjects deletes every pool and VsphereAgent, dropping finalizers no running manager
// would serve (a CRD whose objects keep finalizers never goes).
func clearStoredObjects(ctx context.Context, c client.Client) {
	GinkgoHelper()
	for _, kind := range []string{"VsphereAgentList", "VsphereAgentPoolList"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(afv1.GroupVersion.WithKind(kind))
		if err := c.List(ctx, list); err != nil {
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "listing %s: %v", kind, err)
			continue // the CRD is gone already
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if len(obj.GetFinalizers()) > 0 {
				GinkgoWriter.Printf("dropping finalizers %v of %s %s/%s\n", obj.GetFinalizers(), obj.GetKind(), obj.GetNamespace(), obj.GetName())
				Expect(client.IgnoreNotFound(c.Patch(ctx, obj, client.RawPatch(ktypes.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))).To(Succeed())
			}
			Expect(client.IgnoreNotFound(c.Delete(ctx, obj))).To(Succeed())
		}
	}
}

// waitOurSchemaServed waits until the API server serves our VsphereAgent schema: a dry-run status
// write of status.vm.agentName (unknown to upstream's schema, which prunes it) keeps the field.
func waitOurSchemaServed(ctx context.Context, key ktypes.NamespacedName) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(afv1.GroupVersion.WithKind("VsphereAgent"))
		g.Expect(k8s.Get(ctx, key, probe)).To(Succeed())
		g.Expect(unstructured.SetNestedField(probe.Object, "probe", "status", "vm", "agentName")).To(Succeed())
		g.Expect(k8s.Status().Update(ctx, probe, client.DryRunAll)).To(Succeed())
		_, found, _ := unstructured.NestedString(probe.Object, "status", "vm", "agentName")
		g.Expect(found).To(BeTrue())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// listUpstreamKinds lists every pool and VsphereAgent of the namespace as stored (unstructured).
func listUpstreamKinds(ctx context.Context, ns string) []*unstructured.Unstructured {
	GinkgoHelper()
	var out []*unstructured.Unstructured
	for _, kind := range []string{"VsphereAgentPoolList", "VsphereAgentList"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(afv1.GroupVersion.WithKind(kind))
		Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			out = append(out, list.Items[i].DeepCopy())
		}
	}
	return out
}

// jsonValue turns v into the decoded-JSON form unstructured objects hold (int64 numbers, maps, slices).
func jsonValue(v any) map[string]any {
	GinkgoHelper()
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]any{}
	Expect(utiljson.Unmarshal(data, &out)).To(Succeed())
	return out
}

// upstreamPoolObject is the pool as a user wrote it for upstream (upstream's field names, its
// finalizer on), for the scenario's hub and the simulator's inventory.
func upstreamPoolObject(s *world.Scenario, name string) *unstructured.Unstructured {
	GinkgoHelper()
	labels := map[string]any{}
	for k, v := range s.AgentLabels {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: jsonValue(map[string]any{
		"apiVersion": afv1.GroupVersion.String(), "kind": "VsphereAgentPool",
		"metadata": map[string]any{"namespace": s.Namespace, "name": name, "finalizers": []string{afv1.FinalizerUpstreamPool}},
		"spec": map[string]any{
			"hostedClusterRef": map[string]any{"name": s.HostedCluster.Name}, "nodePoolRef": map[string]any{"name": s.NodePool.Name},
			"infraEnvRef": map[string]any{"name": s.InfraEnv.Name}, "controlPlaneNamespace": s.ControlPlaneNamespace,
			"vsphere": map[string]any{
				"credentialsSecretRef": map[string]any{"name": s.Secret.Name}, "datacenter": vcsim.Datacenter,
				"datastoreCluster": vcsim.Datastore, "isoDatastore": vcsim.Datastore, "resourcePool": vcsim.ResourcePool,
				"network": vcsim.Network, "folder": "agent-forge/" + s.Namespace,
			},
			"template":      map[string]any{"numCPUs": 2, "memoryMiB": 8192, "diskGiB": 100},
			"agent":         map[string]any{"role": "worker", "labels": labels, "approve": true},
			"iso":           map[string]any{"checkInterval": "10m", "retainVersions": 2},
			"cleanupPolicy": "Delete",
		},
	})}
}

// upstreamWorker is one VM upstream made, with what it recorded about it.
type upstreamWorker struct {
	name    string
	version upstreamVersion
	// machine is the Machine of the AgentMachine whose Agent runs on the VM ("" while unbound).
	machine        string
	bios, mac, uid string
	agent          agents.Agent
}

// record is the VM entry upstream writes into VsphereAgent status.vm and pool status.ownedVMs.
func (w upstreamWorker) record(s *world.Scenario) map[string]any {
	r := map[string]any{
		"name": w.name, "biosUUID": w.bios, "macAddress": w.mac,
		"agentRef": map[string]any{"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
			"namespace": s.Namespace, "name": w.agent.Name, "uid": string(w.agent.UID)},
		"phase": "Available", "reason": "AgentApproved", "lastTransitionTime": "2026-07-15T08:14:02Z",
	}
	if w.machine != "" {
		r["machineRef"] = map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "namespace": s.ControlPlaneNamespace, "name": w.machine}
		r["phase"], r["reason"] = "Bound", "AgentBound"
	}
	if w.version == upstream110 {
		r["ownerUID"], r["source"] = w.uid, "VsphereAgent"
	}
	return r
}

// storeUpstreamWorker does what upstream did for one AgentMachine: the VsphereAgent (labels,
// vm-name annotation, finalizer, controller reference to the pool), the VM in the pool's folder with
// the ISO in the drive (1.1.0: Notes marker naming the VsphereAgent's UID), the Agent patched as
// upstream patched it, then the VsphereAgent's reconciled status.
func storeUpstreamWorker(ctx context.Context, s *world.Scenario, pool string, uids map[string]string, iso string, w upstreamWorker) upstreamWorker {
	GinkgoHelper()
	va := olmcheck.StoreObjects(ctx, GinkgoT(), k8s, []*unstructured.Unstructured{{Object: jsonValue(map[string]any{
		"apiVersion": afv1.GroupVersion.String(), "kind": "VsphereAgent",
		"metadata": map[string]any{
			"namespace": s.Namespace, "name": w.name,
			"labels": map[string]string{
				afv1.LabelUpstreamPool: pool, afv1.LabelUpstreamCreatedFor: "agent-machine", afv1.LabelUpstreamAgentMachine: w.name,
			},
			"annotations": map[string]string{afv1.AnnotationUpstreamVMName: w.name},
			"finalizers":  []string{afv1.FinalizerUpstreamVsphereAgent},
			"ownerReferences": []map[string]any{{
				"apiVersion": afv1.GroupVersion.String(), "kind": "VsphereAgentPool", "name": pool,
				"uid": olmcheck.UIDPrefix + "VsphereAgentPool/" + pool, "controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{"poolRef": map[string]any{"name": pool}},
	})}}, uids)[0]
	w.uid = string(va.GetUID())
	notes := ""
	if w.version == upstream110 {
		notes = afv1.UpstreamNotesMarkerPrefix + w.uid
	}
	w.bios, w.mac = createUpstreamVM(ctx, upstreamVM{name: w.name, folder: "agent-forge/" + s.Namespace, notes: notes, iso: iso})
	w.agent = agentOfVM(ctx, s.Namespace, w.mac, w.bios)
	prepareAgentAsUpstream(ctx, s, w.agent.Name, w.name)
	olmcheck.WriteStatus(ctx, GinkgoT(), k8s, va, jsonValue(map[string]any{
		"observedGeneration": va.GetGeneration(),
		"vm":                 w.record(s),
		"conditions": []map[string]any{{"type": "Ready", "status": "True", "reason": w.record(s)["reason"], "message": "",
			"lastTransitionTime": "2026-07-15T08:14:02Z"}},
	}))
	return w
}

// writeUpstreamPoolStatus writes the pool's status as upstream reconciled it over these workers.
func writeUpstreamPoolStatus(ctx context.Context, s *world.Scenario, pool *unstructured.Unstructured, isoPath string, workers ...upstreamWorker) {
	GinkgoHelper()
	var owned []map[string]any
	bound := 0
	for _, w := range workers {
		owned = append(owned, w.record(s))
		if w.machine != "" {
			bound++
		}
	}
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(pool.GroupVersionKind())
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pool), fresh)).To(Succeed())
	olmcheck.WriteStatus(ctx, GinkgoT(), k8s, fresh, jsonValue(map[string]any{
		"observedGeneration": fresh.GetGeneration(), "desiredReplicas": bound, "agentMachines": bound,
		"waitingAgentMachines": 0, "unreadyAgentMachines": 0, "agentMachinesWithoutAgent": 0,
		"matchingAgents": len(workers), "boundAgents": bound, "availableAgents": len(workers) - bound,
		"ownedVMs":       owned,
		"plannedActions": []map[string]any{{"type": "Noop", "reason": "CapacitySatisfied"}},
		"iso": map[string]any{
			// v1.0.2 stores the InfraEnv's URL with its token (a fake one here).
			"url":  "https://assisted-image-service.example/byapikey/" + upstreamFakeToken + "/full.iso?api_key=" + upstreamFakeToken,
			"path": isoPath, "sha256": isoServer.SHA256(), "sizeBytes": len(isoServer.Content()),
			"checkedAt": "2026-07-15T09:00:00Z", "uploadedAt": "2026-07-15T08:00:00Z",
		},
		"conditions": []map[string]any{{"type": "Ready", "status": "True", "reason": "Reconciled", "message": "pool reconciled",
			"lastTransitionTime": "2026-07-15T08:00:00Z", "observedGeneration": fresh.GetGeneration()}},
	}))
}

// upstreamFakeToken stands for the InfraEnv token upstream 1.0.2 keeps in status.iso.url.
const upstreamFakeToken = "upstream-fake-token"
