//go:build linux

package realolm

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

const (
	// catalogNamespace is the catalog operator's global catalog namespace (OLM's default is
	// openshift-operator-lifecycle-manager or olm).
	catalogNamespace = "olm"
	// operatorNamespace is where the Subscription installs the operator (the CSV's suggested namespace).
	operatorNamespace = "agent-forge-operator"
	// poolNamespace and controlPlaneNamespace are the targets of the MultiNamespace OperatorGroup, as
	// docs/install.md shows it (a pool's namespace and its hosted control plane's). The operator's own
	// namespace is no target: OLM then requires OwnNamespace, which the CSV does not support.
	poolNamespace         = "clusters"
	controlPlaneNamespace = "clusters-demo"
	catalogSourceName     = "agent-forge-test"
	// installTimeout bounds the way from the Subscription to a Succeeded CSV. OLM resolves, plans and
	// installs within seconds here; its own limit for Installing is 5 minutes.
	installTimeout = 4 * time.Minute
)

func olmGVK(version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "operators.coreos.com", Version: version, Kind: kind}
}

// olmWorld is envtest with the real OLM running against it and a client for the test.
type olmWorld struct {
	env  *testenv.Env
	c    client.Client
	olm  *Child
	cat  *Child
	opm  string
	info bundleInfo
}

// startOLMWorld starts envtest with OLM's CRDs and the kinds the bundle ships besides its own
// (monitoring.coreos.com, console.openshift.io) but without our CRDs (OLM installs them from the bundle),
// then OLM's two operators as processes (catalogArgs: extra flags of the catalog operator).
func startOLMWorld(ctx context.Context, t *testing.T, catalogArgs ...string) *olmWorld {
	t.Helper()
	dir, err := Dir(ctx)
	if err != nil {
		t.Fatalf("building OLM %s: %v", Version, err)
	}
	opm, err := OPM(ctx)
	if err != nil {
		t.Fatalf("building opm: %v", err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The external kinds the manager watches (HyperShift, Cluster API, Assisted Installer), but not
	// config.openshift.io: OLM switches its OpenShift integrations on when that group is served, and this
	// cluster is plain Kubernetes with OLM installed, as upstream OLM runs.
	external, err := filepath.Glob(filepath.Join(root, "test", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	external = slices.DeleteFunc(external, func(p string) bool { return strings.HasPrefix(filepath.Base(p), "config.openshift.io_") })
	env, err := testenv.Start(testenv.Options{
		WithoutOwnCRDs:      true,
		WithoutExternalCRDs: true,
		ExtraCRDPaths: append([]string{
			filepath.Join(dir, "crds"),
			filepath.Join(root, "test", "olm", "realolm", "testdata", "crds"),
			filepath.Join(root, "test", "docs", "testdata", "crds"), // ConsoleYAMLSample, ConsoleQuickStart
		}, external...),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	c, err := client.New(env.Config, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{catalogNamespace, operatorNamespace, poolNamespace, controlPlaneNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	w := &olmWorld{env: env, c: c, opm: opm}
	w.olm, w.cat = StartOLM(t, dir, WriteKubeconfig(t, env.Config), catalogNamespace, catalogArgs...)
	return w
}

// playDeploymentController does what envtest lacks a process for: the Deployment controller's status
// writes. Every Deployment in ns gets the status of a rolled-out, available Deployment for its current
// generation (again after OLM updates it), which is what OLM waits for before a CSV succeeds. It runs until
// the test ends.
func (w *olmWorld) playDeploymentController(t *testing.T, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var list appsv1.DeploymentList
			if err := w.c.List(ctx, &list, client.InNamespace(ns)); err == nil {
				for i := range list.Items {
					d := &list.Items[i]
					if d.Status.ObservedGeneration >= d.Generation {
						continue
					}
					replicas := int32(1)
					if d.Spec.Replicas != nil {
						replicas = *d.Spec.Replicas
					}
					now := metav1.Now()
					d.Status = appsv1.DeploymentStatus{
						ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
						ReadyReplicas: replicas, AvailableReplicas: replicas,
						Conditions: []appsv1.DeploymentCondition{
							{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
								Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
							{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
								Message: "ReplicaSet has successfully progressed.", LastUpdateTime: now, LastTransitionTime: now},
						},
					}
					_ = w.c.Status().Update(ctx, d) // a conflict is retried on the next pass
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// subscribe publishes the catalog at addr as an address CatalogSource and subscribes to the package on
// channel in operatorNamespace, where an OperatorGroup with targetNamespaces (none: AllNamespaces) exists.
func (w *olmWorld) subscribe(ctx context.Context, t *testing.T, addr string, targetNamespaces []string) {
	t.Helper()
	og := &unstructured.Unstructured{}
	og.SetGroupVersionKind(olmGVK("v1", "OperatorGroup"))
	og.SetNamespace(operatorNamespace)
	og.SetName("agent-forge-operator")
	spec := map[string]any{}
	if len(targetNamespaces) > 0 {
		ts := make([]any, len(targetNamespaces))
		for i, n := range targetNamespaces {
			ts[i] = n
		}
		spec["targetNamespaces"] = ts
	}
	og.Object["spec"] = spec

	cs := &unstructured.Unstructured{}
	cs.SetGroupVersionKind(olmGVK("v1alpha1", "CatalogSource"))
	cs.SetNamespace(operatorNamespace)
	cs.SetName(catalogSourceName)
	cs.Object["spec"] = map[string]any{"sourceType": "grpc", "address": addr, "displayName": "agent-forge-operator (working tree)"}

	sub := &unstructured.Unstructured{}
	sub.SetGroupVersionKind(olmGVK("v1alpha1", "Subscription"))
	sub.SetNamespace(operatorNamespace)
	sub.SetName(w.info.pkg)
	sub.Object["spec"] = map[string]any{"name": w.info.pkg, "channel": w.info.channel, "source": catalogSourceName,
		"sourceNamespace": operatorNamespace, "installPlanApproval": "Automatic"}

	for _, o := range []*unstructured.Unstructured{og, cs, sub} {
		if err := w.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// waitFor polls cond every 250 ms until it holds, the deadline passes or an OLM process dies; a failure
// names what was awaited and dumps the state of OLM's objects.
func (w *olmWorld) waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		for _, c := range []*Child{w.olm, w.cat} {
			if done, why := c.Exited(); done {
				t.Fatalf("%s exited (%v) while waiting until %s\n%s", c.Name, why, what, w.dump(ctx))
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("not within %s: %s (last error: %v)\n%s", timeout, what, last, w.dump(ctx))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// dump renders the status of the OLM objects and Deployments of the operator's namespace, for failures.
func (w *olmWorld) dump(ctx context.Context) string {
	var b strings.Builder
	for _, k := range []schema.GroupVersionKind{olmGVK("v1alpha1", "CatalogSource"), olmGVK("v1alpha1", "Subscription"),
		olmGVK("v1alpha1", "InstallPlan"), olmGVK("v1alpha1", "ClusterServiceVersion"), olmGVK("v1", "OperatorGroup")} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k)
		if err := w.c.List(ctx, list, client.InNamespace(operatorNamespace)); err != nil {
			fmt.Fprintf(&b, "--- %s: %v\n", k.Kind, err)
			continue
		}
		if len(list.Items) == 0 {
			fmt.Fprintf(&b, "--- %s: none\n", k.Kind)
		}
		for _, o := range list.Items {
			if steps, ok, _ := unstructured.NestedSlice(o.Object, "status", "plan"); ok {
				// An InstallPlan's steps carry every manifest: keep each step's resource and status.
				short := make([]any, 0, len(steps))
				for _, st := range steps {
					m, _ := st.(map[string]any)
					kind, _, _ := unstructured.NestedString(m, "resource", "kind")
					name, _, _ := unstructured.NestedString(m, "resource", "name")
					short = append(short, fmt.Sprintf("%s %s: %v", kind, name, m["status"]))
				}
				_ = unstructured.SetNestedSlice(o.Object, short, "status", "plan")
			}
			status, _ := yaml.Marshal(o.Object["status"])
			fmt.Fprintf(&b, "--- %s %s status:\n%s", k.Kind, o.GetName(), status)
		}
	}
	var deps appsv1.DeploymentList
	if err := w.c.List(ctx, &deps, client.InNamespace(operatorNamespace)); err == nil {
		for _, d := range deps.Items {
			fmt.Fprintf(&b, "--- Deployment %s generation %d status: %+v\n", d.Name, d.Generation, d.Status)
		}
	}
	return b.String()
}

// csvPhase reads a CSV's status.phase in the operator namespace.
func (w *olmWorld) csvPhase(ctx context.Context, name string) (string, error) {
	csv := &unstructured.Unstructured{}
	csv.SetGroupVersionKind(olmGVK("v1alpha1", "ClusterServiceVersion"))
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, csv); err != nil {
		return "", err
	}
	phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
	return phase, nil
}

// TestOLMInstallsTheBundle: the real OLM (olm and catalog operators, v0.46.0) installs the working tree's
// bundle through a Subscription to a catalog served by opm: the catalog operator resolves the package,
// plans and applies the bundle's objects, the olm operator creates the RBAC and the Deployment from the CSV,
// and the CSV reaches Succeeded once the Deployment is rolled out (the test plays the Deployment controller
// only). Afterwards the CRDs, the ServiceAccount, the RBAC OLM made from the CSV and the bundle's other
// objects exist as OLM created them, and the manager binary, run with the CSV's arguments and a token of
// the ServiceAccount OLM created, gets ready and takes its leader Lease under exactly that RBAC.
//
// Once per install mode the CSV supports: AllNamespaces (an OperatorGroup without targets; there the manager
// also serves a pool end to end), and MultiNamespace (a pool namespace and a control plane namespace as
// targets) on a cluster that ran the upstream Helm operator: OLM replaces upstream's CRDs only after its own
// check of the stored upstream objects, and nothing upstream wrote is lost.
func TestOLMInstallsTheBundle(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		targets []string
	}{
		{mode: "AllNamespaces"},
		{mode: "MultiNamespace", targets: []string{poolNamespace, controlPlaneNamespace}},
	} {
		t.Run(tc.mode, func(t *testing.T) { installAndRun(t, tc.targets) })
	}
}

// installAndRun is one install through a Subscription with an OperatorGroup targeting targets (none:
// AllNamespaces), in a world of its own.
func installAndRun(t *testing.T, targets []string) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute) // includes a cold OLM build
	defer cancel()
	w := startOLMWorld(ctx, t)
	dir, info := renderCatalog(ctx, t, w.opm)
	w.info = info
	_, addr := ServeCatalog(t, w.opm, dir)
	w.playDeploymentController(t, operatorNamespace)
	// MultiNamespace installs on a cluster that ran the upstream Helm operator: its CRDs and objects exist,
	// and OLM's own CRD check of them must pass.
	var upstream []*unstructured.Unstructured
	if len(targets) > 0 {
		upstream = w.storeUpstreamObjects(ctx, t)
	}
	started := time.Now()
	w.subscribe(ctx, t, addr, targets)

	w.waitFor(ctx, t, installTimeout, "the CatalogSource's gRPC connection is READY", func() (bool, error) {
		cs := &unstructured.Unstructured{}
		cs.SetGroupVersionKind(olmGVK("v1alpha1", "CatalogSource"))
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: catalogSourceName}, cs); err != nil {
			return false, err
		}
		state, _, _ := unstructured.NestedString(cs.Object, "status", "connectionState", "lastObservedState")
		return state == "READY", fmt.Errorf("connection state %q", state)
	})
	w.waitFor(ctx, t, installTimeout, "CSV "+info.csvName+" is Succeeded", func() (bool, error) {
		phase, err := w.csvPhase(ctx, info.csvName)
		if err != nil {
			return false, err
		}
		return phase == "Succeeded", fmt.Errorf("phase %q", phase)
	})
	t.Logf("CSV %s Succeeded %s after the Subscription", info.csvName, time.Since(started).Round(time.Second))

	// What OLM created, as OLM created it.
	sub := &unstructured.Unstructured{}
	sub.SetGroupVersionKind(olmGVK("v1alpha1", "Subscription"))
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: info.pkg}, sub); err != nil {
		t.Fatal(err)
	}
	if installed, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV"); installed != info.csvName {
		t.Errorf("Subscription status.installedCSV = %q, want %q", installed, info.csvName)
	}
	crds := []string{"vsphereagentpools.agent-forge.containeroo.ch", "vsphereagents.agent-forge.containeroo.ch"}
	for _, name := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := w.c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}) {
			t.Errorf("CRD %s is not Established", name)
		}
	}
	var deps appsv1.DeploymentList
	if err := w.c.List(ctx, &deps, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 1 {
		t.Fatalf("OLM created %d Deployments in %s, want 1", len(deps.Items), operatorNamespace)
	}
	sa := deps.Items[0].Spec.Template.Spec.ServiceAccountName
	if err := w.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: sa}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("the Deployment's ServiceAccount %s: %v", sa, err)
	}
	// OLM binds the CSV's clusterPermissions cluster-wide, and its permissions cluster-wide too for
	// AllNamespaces, or by a RoleBinding in each target namespace for MultiNamespace.
	binds := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == operatorNamespace && s.Name == sa
		})
	}
	var crbs rbacv1.ClusterRoleBindingList
	if err := w.c.List(ctx, &crbs); err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, b := range crbs.Items {
		if binds(b.Subjects) {
			bound++
		}
	}
	if want := map[bool]int{true: 2, false: 1}[len(targets) == 0]; bound != want {
		t.Errorf("%d ClusterRoleBindings bind %s/%s, want %d", bound, operatorNamespace, sa, want)
	}
	for _, ns := range targets {
		var rbs rbacv1.RoleBindingList
		if err := w.c.List(ctx, &rbs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rbs.Items, func(b rbacv1.RoleBinding) bool { return binds(b.Subjects) }) {
			t.Errorf("no RoleBinding in target namespace %s binds %s/%s", ns, operatorNamespace, sa)
		}
	}
	for _, k := range []schema.GroupVersionKind{
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k)
		if err := w.c.List(ctx, list, client.InNamespace(operatorNamespace)); err != nil || len(list.Items) != 1 {
			t.Errorf("the bundle's %s in %s: %d objects (%v), want 1", k.Kind, operatorNamespace, len(list.Items), err)
		}
	}

	if upstream != nil {
		w.assertUpstreamKept(ctx, t, upstream)
	}
	m := w.runManagerUnderOLM(ctx, t, &deps.Items[0])
	if len(targets) == 0 { // once: the RBAC of both modes grants the same verbs, AllNamespaces cluster-wide
		w.servePoolUnderOLM(ctx, t, m)
		if strings.Contains(m.Tail(), "forbidden") {
			t.Errorf("the manager logged a refusal under OLM's RBAC while serving the pool:\n%s", m.Tail())
		}
	}
}
