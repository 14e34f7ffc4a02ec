//go:build linux

package realolm

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// leaseName is the manager's leader-election Lease (cmd: LeaderElectionID).
const leaseName = "agent-forge-operator.containeroo.ch"

// buildManager compiles ./cmd as `make build` does (with the test binary's -race, so the build cache is
// shared) into dir.
func buildManager(ctx context.Context, t *testing.T, dir string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "manager")
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, b)
	}
	return out
}

// managerArgs turns the container OLM created from the CSV into the manager's command line outside a
// pod: the CSV's own arguments, with what the kubelet would provide replaced by what a process here has
// (the target namespaces from the pod template's olm.targetNamespaces annotation, which OLM sets and the
// CSV's WATCH_NAMESPACES variable reads; loopback ports; a certificate folder and CA bundle path in the
// test's temporary folder, both still absent, as on a cluster before service-ca has written them).
func managerArgs(t *testing.T, d *appsv1.Deployment, kubeconfig, probeAddr string) []string {
	t.Helper()
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("OLM's Deployment %s has %d containers, want 1", d.Name, len(d.Spec.Template.Spec.Containers))
	}
	targets, ok := d.Spec.Template.Annotations["olm.targetNamespaces"]
	if !ok {
		t.Fatalf("OLM's Deployment %s has no olm.targetNamespaces annotation on its pod template: %v", d.Name, d.Spec.Template.Annotations)
	}
	tmp := t.TempDir()
	// Outside a pod the manager finds neither its namespace nor its token on disk: the kubeconfig and the
	// Lease's namespace say them.
	args := []string{"--kubeconfig=" + kubeconfig, "--field-validation=Strict", "--leader-election-namespace=" + d.Namespace}
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--health-probe-bind-address":
			a = name + "=" + probeAddr
		case "--metrics-bind-address":
			a = name + fmt.Sprintf("=127.0.0.1:%d", FreePort(t))
		case "--metrics-cert-path":
			a = name + "=" + filepath.Join(tmp, "metrics-cert")
		case "--trusted-ca-bundle":
			a = name + "=" + filepath.Join(tmp, "tls-ca-bundle.pem")
		}
		args = append(args, strings.ReplaceAll(a, "$(WATCH_NAMESPACES)", targets))
	}
	return args
}

// serviceAccountConfig returns a config that authenticates as the ServiceAccount ns/sa with a token from
// the TokenRequest API, as a pod's projected token would.
func serviceAccountConfig(ctx context.Context, t *testing.T, admin *rest.Config, ns, sa string) *testenv.Identity {
	t.Helper()
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for %s/%s: %v", ns, sa, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tok.Status.Token
	return &testenv.Identity{Namespace: ns, ServiceAccount: sa, Config: cfg}
}

// runManagerUnderOLM runs the manager binary as the kubelet would run OLM's Deployment: with a token of the
// ServiceAccount OLM created and bound from the CSV, and the CSV's arguments. It waits until the manager
// holds its leader-election Lease and answers /readyz (its caches synced): every list and watch it starts
// with passed under exactly the RBAC OLM made.
func (w *olmWorld) runManagerUnderOLM(ctx context.Context, t *testing.T, d *appsv1.Deployment) *Child {
	t.Helper()
	bin := buildManager(ctx, t, t.TempDir())
	id := serviceAccountConfig(ctx, t, w.env.Config, d.Namespace, d.Spec.Template.Spec.ServiceAccountName)
	kubeconfig, err := id.WriteKubeconfig(filepath.Join(t.TempDir(), "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	probeAddr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	m := Start(t, "manager", bin, managerArgs(t, d, kubeconfig, probeAddr), nil)
	httpc := &http.Client{Timeout: 5 * time.Second}
	ready := func(path string) func() (bool, error) {
		return func() (bool, error) {
			if done, why := m.Exited(); done {
				t.Fatalf("the manager exited (%v) under OLM's RBAC:\n%s", why, m.Tail())
			}
			resp, err := httpc.Get("http://" + probeAddr + path)
			if err != nil {
				return false, err
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", path, resp.Status)
		}
	}
	w.waitFor(ctx, t, 2*time.Minute, "the manager under OLM's RBAC answers /readyz/caches", ready("/readyz/caches"))
	w.waitFor(ctx, t, time.Minute, "the manager under OLM's RBAC answers /readyz", ready("/readyz"))
	w.waitFor(ctx, t, 3*time.Minute, "the manager under OLM's RBAC holds its leader-election Lease", func() (bool, error) {
		lease := &coordinationv1.Lease{}
		if err := w.c.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: leaseName}, lease); err != nil {
			return false, err
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "") != "", nil
	})
	if strings.Contains(m.Tail(), "forbidden") {
		t.Errorf("the manager logged a refusal under OLM's RBAC:\n%s", m.Tail())
	}
	return m
}
