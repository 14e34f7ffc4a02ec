package apifaults

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// TestDisabledProxyIsTransparentToTheOperator runs what the manager binary does at start through a
// disabled proxy against a real API server: its config is loaded from the kubeconfig WriteKubeconfig
// writes (as --kubeconfig does) and must authenticate as the operator's ServiceAccount; aggregated
// discovery must list the external CRD groups, controller-runtime's REST mapper (the manager's CRD guard)
// must map every external kind, and a watch must deliver an event while it is open (streamed, not
// buffered). Before the proxy spoke TLS, clientcmd dropped the kubeconfig's token for its plain-HTTP
// server: the manager was anonymous and saw every external CRD missing.
func TestDisabledProxyIsTransparentToTheOperator(t *testing.T) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := env.OperatorIdentity(ctx, testenv.IdentityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(env.Config, Options{Seed: 1, LostResponse: 1, Burst: 1, WatchCut: 1, Slow: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	kc := filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := p.WriteKubeconfig(kc, id.Config.BearerToken); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != id.Config.BearerToken {
		t.Fatalf("the proxy's kubeconfig loads without the ServiceAccount token (server %s): the manager would be anonymous", cfg.Host)
	}
	cfg.Timeout = 30 * time.Second
	review, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	who, err := review.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("who am I through the proxy: %v", err)
	}
	if want := "system:serviceaccount:" + id.Namespace + ":" + id.ServiceAccount; who.Status.UserInfo.Username != want {
		t.Fatalf("through the proxy the API server sees %q, want %q", who.Status.UserInfo.Username, want)
	}

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		t.Fatalf("discovery through the proxy: %v", err)
	}
	served := map[string]bool{}
	for _, g := range groups.Groups {
		served[g.Name] = true
	}
	for _, k := range agents.ExternalGroupKinds {
		if !served[k.Group] {
			t.Errorf("discovery through the proxy does not list group %s (of %s)", k.Group, k.Kind)
		}
	}

	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range agents.ExternalGroupKinds {
		var last error
		for _, v := range k.Versions {
			if _, last = mapper.RESTMapping(k.GroupKind, v); last == nil {
				break
			}
		}
		if last != nil {
			t.Errorf("REST mapping of %s through the proxy: %v", k.GroupKind, last)
		}
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := id.Namespace
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch through the proxy: %v", err)
	}
	defer w.Stop()
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added {
			t.Fatalf("watch through the proxy delivered %s %v, want ADDED", ev.Type, ev.Object)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a watch through the proxy delivered nothing within 20s of a create (the stream is buffered)")
	}
	if p.Total() != 0 {
		t.Fatalf("faults injected while disabled: %s", p)
	}
	resp, err := p.HTTPClient().Get(p.URL.String() + "/readyz")
	if err != nil {
		t.Fatalf("proxy not serving: %v", err)
	}
	_ = resp.Body.Close()
}
