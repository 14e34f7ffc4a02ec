package manager

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

func TestManagerWithSecureMetrics(t *testing.T) {
	ns := createNamespace(t, env, "secure-metrics")
	p := startManager(t, env, ns, "--leader-elect=true", "--leader-election-namespace="+ns)
	t.Logf("probes answered 200 after %s", p.waitForProbes(t).Round(time.Millisecond))
	holder := waitForLease(t, env, p, ns)
	t.Logf("leader election Lease %s/%s held by %s", ns, leaseName, holder)
	// OpenShift's leader-election timings by default (137 s / 107 s / 26 s), not controller-runtime's 15 s.
	if got := leaseDurationSeconds(t, ns); got != 137 {
		t.Errorf("the Lease's leaseDurationSeconds = %d, want OpenShift's 137", got)
	}

	allowed := serviceAccountToken(t, ns, "metrics-reader", true)
	denied := serviceAccountToken(t, ns, "no-metrics", false)
	url := fmtURL("https", p.metricsAddr, "/metrics")

	var body string
	p.eventually(t, startTimeout, "metrics answer 200 to an authorized ServiceAccount", func() bool {
		code, b, err := get(tlsClient, url, allowed)
		body = b
		return err == nil && code == http.StatusOK
	})
	assertPrometheusText(t, body)

	if code, _, err := get(tlsClient, url, ""); err != nil || code != http.StatusUnauthorized {
		t.Errorf("unauthenticated request: code %d, err %v; want 401", code, err)
	}
	if code, _, err := get(tlsClient, url, denied); err != nil || code != http.StatusForbidden {
		t.Errorf("ServiceAccount without RBAC: code %d, err %v; want 403", code, err)
	}
	if code, _, err := get(plainClient, fmtURL("http", p.metricsAddr, "/metrics"), allowed); err == nil && code == http.StatusOK {
		t.Errorf("secure metrics also answered plain HTTP")
	}

	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	assertLeaseReleased(t, ns)
}

func TestManagerWithPlainMetrics(t *testing.T) {
	ns := createNamespace(t, env, "plain-metrics")
	// Also the namespace-restriction flags an OperatorGroup-scoped install uses.
	p := startManager(t, env, ns, "--leader-elect=true", "--leader-election-namespace="+ns, "--metrics-secure=false",
		"--watch-namespaces="+ns+",default", "--credentials-secret-namespaces=default",
		"--leader-elect-lease-duration=40s", "--leader-elect-renew-deadline=30s", "--leader-elect-retry-period=5s")
	p.waitForProbes(t)
	waitForLease(t, env, p, ns)
	if got := leaseDurationSeconds(t, ns); got != 40 {
		t.Errorf("the Lease's leaseDurationSeconds = %d, want the flag's 40", got)
	}

	var body string
	p.eventually(t, startTimeout, "plain metrics answer 200", func() bool {
		code, b, err := get(plainClient, fmtURL("http", p.metricsAddr, "/metrics"), "")
		body = b
		return err == nil && code == http.StatusOK
	})
	assertPrometheusText(t, body)
	if !strings.Contains(body, "agent_forge_external_crds_missing 0") {
		t.Errorf("with every external CRD installed, agent_forge_external_crds_missing should be 0")
	}

	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
}

// TestManagerStartsBeforeExternalCRDs: on a cluster without HyperShift/CAPI/Assisted CRDs the manager
// stays up, answers its probes and reports what is missing, instead of crash-looping.
func TestManagerStartsBeforeExternalCRDs(t *testing.T) {
	bare, err := testenv.Start(testenv.Options{WithoutExternalCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bare.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	ns := createNamespace(t, bare, "no-external-crds")
	p := startManager(t, bare, ns, "--leader-elect=true", "--leader-election-namespace="+ns, "--metrics-secure=false")
	p.waitForProbes(t)

	p.eventually(t, startTimeout, "the manager logs the missing external CRDs", func() bool {
		return strings.Contains(p.output.String(), "external CRDs not installed")
	})
	for _, kind := range []string{"Agent", "InfraEnv", "AgentMachine", "NodePool"} {
		if !strings.Contains(p.output.String(), kind) {
			t.Errorf("missing-CRD report does not name %s", kind)
		}
	}
	var body string
	p.eventually(t, startTimeout, "metrics report the missing CRDs", func() bool {
		code, b, err := get(plainClient, fmtURL("http", p.metricsAddr, "/metrics"), "")
		body = b
		return err == nil && code == http.StatusOK && strings.Contains(b, "agent_forge_external_crds_missing")
	})
	if strings.Contains(body, "agent_forge_external_crds_missing 0") {
		t.Errorf("agent_forge_external_crds_missing is 0 without external CRDs")
	}

	waitForLease(t, bare, p, ns)

	// A crash-looping manager exits within seconds of its first failure; this one keeps answering. (A real
	// process has no clock to inject, so this is a bounded watch, not a timing assertion.)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if code, _, err := get(plainClient, fmtURL("http", p.probeAddr, "/healthz"), ""); err != nil || code != http.StatusOK {
			t.Fatalf("healthz without external CRDs: %d %v (running: %v)", code, err, p.running())
		}
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
}

func createNamespace(t *testing.T, e *testenv.Env, prefix string) string {
	t.Helper()
	c := adminClient(t, e)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func adminClient(t *testing.T, e *testenv.Env) client.Client {
	t.Helper()
	c, err := client.New(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitForLease waits until the manager holds the leader election Lease and returns the holder.
func waitForLease(t *testing.T, e *testenv.Env, p *managerProcess, ns string) string {
	t.Helper()
	c := adminClient(t, e)
	var holder string
	p.eventually(t, startTimeout, "the leader election Lease is held", func() bool {
		lease := &coordinationv1.Lease{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, lease); err != nil {
			return false
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return false
		}
		holder = *lease.Spec.HolderIdentity
		return true
	})
	return holder
}

// leaseDurationSeconds reads the leader-election Lease's spec.leaseDurationSeconds (what the holder wrote).
func leaseDurationSeconds(t *testing.T, ns string) int32 {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := adminClient(t, env).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return *lease.Spec.LeaseDurationSeconds
}

// assertLeaseReleased checks the manager gave up leadership on shutdown (LeaderElectionReleaseOnCancel),
// so a new replica takes over at once instead of waiting out the lease.
func assertLeaseReleased(t *testing.T, ns string) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := adminClient(t, env).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaseName}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("Lease still held by %s after a clean shutdown", *lease.Spec.HolderIdentity)
	}
}

// serviceAccountToken creates a ServiceAccount in ns, optionally bound to a ClusterRole that may get
// /metrics (what config/rbac's metrics-reader grants Prometheus), and returns a short-lived token.
func serviceAccountToken(t *testing.T, ns, name string, canReadMetrics bool) string {
	t.Helper()
	ctx := context.Background()
	c := adminClient(t, env)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if canReadMetrics {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}
		for _, obj := range []client.Object{role, binding} {
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	expiry := int64(600)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}
