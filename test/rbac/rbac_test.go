// Package rbac proves that the permissions the operator ships (the CSV's clusterPermissions and
// permissions) are both sufficient and minimal: the operator's whole job runs under exactly those
// grants without one refusal, every granted verb is used, and removing any one rule makes the scenario
// that needs it fail with a refusal.
package rbac

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/controllers"
	"github.com/containeroo/agent-forge-operator/internal/dashboard"
	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
	"github.com/containeroo/agent-forge-operator/test/sim/world"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

const (
	stepTimeout  = 60 * time.Second
	pollInterval = 200 * time.Millisecond
	// stopTimeout is short: a manager refused a list/watch never syncs its cache, and controller-runtime
	// cannot stop it then (it is left behind; the harness's API server goes away at the end).
	stopTimeout = 2 * time.Second
)

// admissionOnly are grants no request names: the API server checks them while admitting another
// request. OwnerReferencesPermissionEnforcement (on in OpenShift and in our envtest) requires "update" on
// the owner's finalizers to set blockOwnerDeletion, which a controller reference does when the
// operator creates a VsphereAgent owned by its pool. The removal test still proves each is needed.
var admissionOnly = map[access]string{
	{"agent-forge.containeroo.ch", "vsphereagentpools/finalizers", "update"}: "VsphereAgents are created with a controller reference (blockOwnerDeletion) to their pool",
	// The console dashboard is written with server-side apply (a PATCH): the API server authorizes the
	// create it turns into as create, and a change of its ownerReferences as delete. internal/dashboard's
	// envtest shows each of the two is needed.
	{"", "configmaps", "create"}: "the dashboard's server-side apply creates it",
	{"", "configmaps", "delete"}: "the dashboard's ownerReferences set again after its owner was re-created",
}

// errRefused ends a scenario early: the API server refused one of the operator's requests.
var errRefused = errors.New("the API server refused a request of the operator")

func TestShippedPermissions(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	h, err := harness.Start(ctx, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("harness cleanup: %v", err)
		}
	})
	shipped, err := testenv.ShippedPermissions()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(slices.Clone(shipped.Cluster), shipped.Namespaced...) {
		if len(r.NonResourceURLs) > 0 || slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			t.Fatalf("rule %v: wildcards and nonResourceURLs are not analysed by this test", r)
		}
	}
	run := 0
	scenario := func(name string, perms testenv.Permissions, mode installMode, stopOnRefusal bool) (*recorder, error) {
		run++
		return runScenario(ctx, t, h, fmt.Sprintf("rbac-%d", run), name, perms, mode, stopOnRefusal)
	}

	var recs []*recorder
	for _, mode := range []installMode{allNamespaces, multiNamespace} {
		t.Run(string(mode)+": sufficient", func(t *testing.T) { recs = append(recs, sufficient(t, shipped, mode, scenario)) })
	}
	t.Run("every granted verb used", func(t *testing.T) { everyVerbUsed(t, shipped, recs) })

	// One rule per resource, so that a resource sharing a rule with others (controller-gen merges rules
	// with equal verbs) is proven needed on its own. Removals run in MultiNamespace mode, where the
	// namespaced rules are granted only in the target namespaces (AllNamespaces grants the same rules
	// wider, so a rule needed there is needed here).
	shipped.Cluster, shipped.Namespaced = perResource(shipped.Cluster), perResource(shipped.Namespaced)
	removals := func(rules []rbacv1.PolicyRule, scope string, without func(int) testenv.Permissions) {
		for i, r := range rules {
			t.Run(fmt.Sprintf("without %v %v %v", r.APIGroups, r.Resources, r.Verbs), func(t *testing.T) {
				start := time.Now()
				rec, err := scenario(fmt.Sprintf("%s-%d", scope, i), without(i), multiNamespace, true)
				refused := rec.forbiddenRequests()
				if len(refused) == 0 {
					t.Fatalf("the scenario passed without this rule (err %v): the rule is not needed", err)
				}
				t.Logf("refused after %.1fs: %s", time.Since(start).Seconds(), refused[0])
			})
		}
	}
	removals(shipped.Cluster, "cluster", func(i int) testenv.Permissions {
		p := shipped
		p.Cluster = slices.Delete(slices.Clone(shipped.Cluster), i, i+1)
		return p
	})
	removals(shipped.Namespaced, "namespaced", func(i int) testenv.Permissions {
		p := shipped
		p.Namespaced = slices.Delete(slices.Clone(shipped.Namespaced), i, i+1)
		return p
	})
}

// installMode is how OLM grants the CSV's permissions (the namespaced rules): per target namespace for
// a MultiNamespace OperatorGroup, cluster-wide for AllNamespaces. clusterPermissions are cluster-wide
// in both.
type installMode string

const (
	allNamespaces  installMode = "AllNamespaces"
	multiNamespace installMode = "MultiNamespace"
)

type scenarioFunc func(name string, perms testenv.Permissions, mode installMode, stopOnRefusal bool) (*recorder, error)

// sufficient runs the whole job under the shipped permissions as OLM grants them in one install mode:
// no request may be refused.
func sufficient(t *testing.T, shipped testenv.Permissions, mode installMode, scenario scenarioFunc) *recorder {
	start := time.Now()
	rec, err := scenario("shipped-"+strings.ToLower(string(mode)), shipped, mode, false)
	if err != nil {
		t.Errorf("the operator's whole job under the shipped permissions: %v", err)
	}
	if refused := rec.forbiddenRequests(); len(refused) > 0 {
		t.Errorf("the shipped permissions refused %d requests:\n  %s", len(refused), strings.Join(refused, "\n  "))
	}
	t.Logf("whole job under the shipped permissions (%s) in %.1fs", mode, time.Since(start).Seconds())
	return rec
}

// everyVerbUsed fails for a granted verb no scenario used (the modes share one API server, so a Lease
// the first created is only updated by the second).
func everyVerbUsed(t *testing.T, shipped testenv.Permissions, recs []*recorder) {
	if len(recs) == 0 {
		t.Fatal("no whole-job scenario ran")
	}
	usedBy := func(a access) bool {
		for _, rec := range recs {
			if rec.wasUsed(a) {
				return true
			}
		}
		return false
	}
	for _, a := range grants(append(slices.Clone(shipped.Cluster), shipped.Namespaced...)) {
		if _, ok := admissionOnly[a]; ok {
			continue
		}
		used := usedBy(a)
		if a.verb == "list" {
			// Informers list, then watch; client-go streams the initial list as a watch
			// (sendInitialEvents) where the server supports it, and lists where it does not.
			used = used || usedBy(access{a.group, a.resource, "watch"})
		}
		if !used {
			t.Errorf("granted but never used in the scenarios: %s", a)
		}
	}
	if t.Failed() {
		for _, rec := range recs {
			t.Logf("requests the operator made:\n  %s", strings.Join(rec.usedList(), "\n  "))
		}
	}
}

// runScenario plays the operator's whole job in namespace ns, with the operator running as a
// ServiceAccount holding perms (leader election and secure metrics on, as deployed), on a static-IP pool
// (address leases from the world's IPAM pool, NMStateConfigs in the regenerated image): the discovery ISO
// is cached, the NodePool scales 0 -> 2 (VMs created, Agents prepared and bound, ISOs ejected after
// install), then 2 -> 1 (a VM and its Agent removed), the metrics are scraped by an authorized reader,
// and the pool is deleted (its VMs destroyed by the Delete policy). With stopOnRefusal it returns as soon
// as the API server refuses one of the operator's requests.
func runScenario(parent context.Context, t *testing.T, h *harness.Harness, ns, idName string, perms testenv.Permissions, mode installMode, stopOnRefusal bool) (*recorder, error) {
	t.Helper()
	rec := newRecorder()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()

	pool, err := harness.LoadSamplePool()
	if err != nil {
		return rec, err
	}
	pool.Namespace = ns
	if _, err := h.AdaptToSimulator(ctx, pool); err != nil {
		return rec, err
	}
	s, err := h.Scenario(ctx, world.SetupOptions{
		Namespace: ns, HostedCluster: pool.Spec.HostedClusterRef.Name, NodePool: pool.Spec.NodePoolRef.Name,
		InfraEnv: pool.Spec.InfraEnvRef.Name, AgentLabels: pool.Spec.Agent.LabelSet(), SecretName: pool.Spec.VSphere.CredentialsSecretRef.Name,
	})
	if err != nil {
		return rec, err
	}
	pool.Spec.ControlPlaneNamespace = s.ControlPlaneNamespace
	// A static-IP pool: its job uses every grant a DHCP pool's does, plus the IPAM claims, addresses and
	// NMStateConfigs of its leases.
	staticIPs, err := h.EnableStaticIPs(ctx, s, pool, 1)
	if err != nil {
		return rec, err
	}
	// The image host's CA from a ConfigMap (spec.iso.caBundleRef): watched by metadata, read uncached.
	if err := withImageHostCA(ctx, h, pool); err != nil {
		return rec, err
	}
	ie := s.InfraEnv
	w, err := h.StartWorldUntil(ctx, world.Options{Namespaces: s.Namespaces(), InfraEnv: &ie, StaticIP: staticIPs,
		RegistrationDelay: 200 * time.Millisecond, ValidationDelay: 100 * time.Millisecond, InstallDelay: 500 * time.Millisecond}, 100*time.Millisecond)
	if err != nil {
		return rec, err
	}
	if err := prepareDashboard(ctx, h.Client); err != nil {
		return rec, err
	}
	idOpts := testenv.IdentityOptions{Name: idName, Permissions: &perms}
	if mode == multiNamespace {
		idOpts.TargetNamespaces = s.Namespaces() // the OperatorGroup targets the namespaces the manager watches
	}
	id, err := h.Env.OperatorIdentity(ctx, idOpts)
	if err != nil {
		return rec, err
	}
	metricsAddr, err := harness.FreeLoopbackAddr()
	if err != nil {
		return rec, err
	}
	m, err := h.StartManagerInProcess(harness.InProcessOptions{
		Identity: id, LeaderElection: true, SecureMetricsAddr: metricsAddr, WrapConfig: rec.wrap,
		Namespaces: s.Namespaces(), StopTimeout: stopTimeout,
		Controllers: controllers.Options{Settings: controllers.Settings{DebounceIdle: 100 * time.Millisecond, DebounceMax: time.Second}},
	})
	if err != nil {
		return rec, err
	}
	defer func() {
		if err := m.Stop(); err != nil {
			t.Logf("stopping the manager: %v", err)
		}
		rec.cutOff() // a manager that did not stop is left behind: cut it off the API server
	}()

	key := types.NamespacedName{Namespace: ns, Name: pool.Name}
	await := func(what string, cond func(*harness.Snapshot) bool) error {
		deadline := time.Now().Add(stepTimeout)
		for {
			if stopOnRefusal && len(rec.forbiddenRequests()) > 0 {
				return fmt.Errorf("%s: %w", what, errRefused)
			}
			snap, err := h.Observe(ctx, key, w, s.NodePool)
			if err == nil && cond(snap) {
				return nil
			}
			if time.Now().After(deadline) {
				desc := fmt.Sprint(err)
				if snap != nil {
					desc = snap.Describe()
				}
				return fmt.Errorf("%s: not reached within %s: %s", what, stepTimeout, desc)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pollInterval):
			}
		}
	}
	if err := h.Client.Create(ctx, pool); err != nil {
		return rec, err
	}
	steps := []func() error{
		func() error { return scrapeMetrics(ctx, h, id.Namespace, idName, metricsAddr, rec, stopOnRefusal) },
		func() error {
			return await("ISO cached", func(s *harness.Snapshot) bool { return s.Pool.Status.ISO != nil && s.Pool.Status.ISO.Path != "" })
		},
		func() error { return w.SetReplicas(ctx, s.NodePool, 2) },
		func() error {
			return await("2 workers installed, ISOs ejected", func(s *harness.Snapshot) bool {
				return s.ScaledUp(2) && s.Installed() == 2 && s.EjectedNow() == 2
			})
		},
		func() error { return w.SetReplicas(ctx, s.NodePool, 1) },
		func() error {
			return await("scaled down to 1", func(s *harness.Snapshot) bool { return s.ScaledDown(1) })
		},
		func() error { return h.Client.Delete(ctx, pool) },
		func() error { return awaitPoolGone(ctx, h, key, rec, stopOnRefusal) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

func awaitPoolGone(ctx context.Context, h *harness.Harness, key types.NamespacedName, rec *recorder, stopOnRefusal bool) error {
	deadline := time.Now().Add(stepTimeout)
	for {
		if stopOnRefusal && len(rec.forbiddenRequests()) > 0 {
			return fmt.Errorf("pool deletion: %w", errRefused)
		}
		err := h.Client.Get(ctx, key, &afv1.VsphereAgentPool{})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool %s still exists %s after its deletion", key, stepTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// scrapeMetrics reads /metrics as a ServiceAccount bound to the shipped metrics-reader ClusterRole: the
// manager authenticates the token (TokenReview) and authorizes it (SubjectAccessReview) with its own
// identity, which needs those grants.
func scrapeMetrics(ctx context.Context, h *harness.Harness, ns, name, addr string, rec *recorder, stopOnRefusal bool) error {
	token, err := metricsReaderToken(ctx, h.Env.Config, ns, "metrics-reader-"+name)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(stepTimeout)
	for {
		code, err := getMetrics(ctx, "https://"+addr+"/metrics", token)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if stopOnRefusal && len(rec.forbiddenRequests()) > 0 {
			return fmt.Errorf("metrics: %w", errRefused)
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("metrics: code %d: %w", code, err)
			}
			return fmt.Errorf("metrics: code %d", code)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// prepareDashboard makes the API server look like OpenShift to the console dashboard installer (its
// namespace and the bundle's owner ClusterRole exist) and removes the dashboard an earlier scenario wrote,
// so every scenario's manager creates it.
func prepareDashboard(ctx context.Context, c client.Client) error {
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dashboard.Namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: dashboard.OwnerClusterRole}},
	} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: dashboard.Namespace, Name: dashboard.Name}}
	return client.IgnoreNotFound(c.Delete(ctx, cm))
}

// withImageHostCA creates a ConfigMap holding a private CA in the pool's namespace and names it in
// spec.iso.caBundleRef (the download over plain HTTP does not need it; the pool reads it every pass).
func withImageHostCA(ctx context.Context, h *harness.Harness, pool *afv1.VsphereAgentPool) error {
	ca, err := sim.NewPrivateCA("rbac image host CA")
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: "image-host-ca"}, Data: map[string]string{afv1.DefaultCABundleKey: string(ca.PEM())}}
	if err := h.Client.Create(ctx, cm); err != nil {
		return err
	}
	pool.Spec.ISO.CABundleRef = &afv1.CABundleReference{Kind: afv1.CABundleKindConfigMap, Name: cm.Name}
	return nil
}

// perResource splits rules so that each names one API group and one resource.
func perResource(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				one := *r.DeepCopy()
				one.APIGroups, one.Resources = []string{g}, []string{res}
				out = append(out, one)
			}
		}
	}
	return out
}
