package apifaults

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/containeroo/agent-forge-operator/internal/agents"
	"github.com/containeroo/agent-forge-operator/test/testenv"
)

// TestDisabledProxyIsTransparentToTheOperator runs what the manager does at start through a disabled
// proxy against a real API server, as the operator's ServiceAccount: aggregated discovery must list the
// external CRD groups, controller-runtime's REST mapper (the manager's CRD guard) must map every external
// kind, and a watch must deliver an event while it is open (streamed, not buffered).
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
	// What the binary gets from the proxy's kubeconfig: plain HTTP to loopback and the bearer token.
	cfg := &rest.Config{Host: p.URL.String(), BearerToken: id.Config.BearerToken, Timeout: 30 * time.Second}

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
	// The operator's own request path is plain HTTP/1.1 to loopback; the check above ran over it.
	if _, err := http.Get(p.URL.String() + "/healthz"); err != nil {
		t.Fatalf("proxy not serving: %v", err)
	}
}
