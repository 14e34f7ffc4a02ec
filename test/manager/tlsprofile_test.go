package manager

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// handshake tells whether a TLS client limited to [minV, maxV] (and, when set, to one TLS 1.2 suite)
// completes a handshake with the metrics server.
func handshake(addr string, minV, maxV uint16, suite uint16) error {
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: minV, MaxVersion: maxV} //nolint:gosec // self-signed test certificate
	if suite != 0 {
		cfg.CipherSuites = []uint16{suite}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	return conn.Close()
}

func apiServerConfig(profile map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"tlsSecurityProfile": profile}}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "APIServer"})
	u.SetName("cluster")
	return u
}

// TestMetricsFollowClusterTLSProfile: on OpenShift (the APIServer "cluster" object served, from
// openshift/api's own CRD) the metrics server takes the cluster's TLS security profile: Modern refuses
// TLS 1.2; a change of the profile restarts the process, which then serves the new one (Intermediate:
// TLS 1.2 with its ECDHE-GCM suites, not a CBC suite Go would otherwise offer).
func TestMetricsFollowClusterTLSProfile(t *testing.T) {
	ctx := context.Background()
	c := adminClient(t, env)
	cluster := apiServerConfig(map[string]any{"type": "Modern", "modern": map[string]any{}})
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	// Cluster-scoped and shared by this package's tests: remove it again.
	t.Cleanup(func() { _ = c.Delete(context.Background(), apiServerConfig(nil)) })

	ns := createNamespace(t, env, "tls-profile")
	p := startManager(t, env, ns, "--tls-profile-check-interval=1s")
	p.waitForProbes(t)
	p.eventually(t, startTimeout, "metrics serve TLS 1.3", func() bool {
		return handshake(p.metricsAddr, tls.VersionTLS13, tls.VersionTLS13, 0) == nil
	})
	if err := handshake(p.metricsAddr, tls.VersionTLS12, tls.VersionTLS12, 0); err == nil {
		t.Fatal("the Modern profile is on, but the metrics server completed a TLS 1.2 handshake")
	}

	current := apiServerConfig(nil)
	if err := c.Get(ctx, client.ObjectKey{Name: "cluster"}, current); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedMap(current.Object, map[string]any{"type": "Intermediate", "intermediate": map[string]any{}}, "spec", "tlsSecurityProfile"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
	p.eventually(t, 30*time.Second, "the manager exits after the profile changed", func() bool { return !p.running() })
	if out := p.output.String(); !strings.Contains(out, "restarting to apply it") {
		t.Errorf("the manager's log does not say why it stopped:\n%s", out)
	}

	p = startManager(t, env, ns, "--tls-profile-check-interval=1s")
	p.waitForProbes(t)
	p.eventually(t, startTimeout, "metrics serve TLS 1.2 with an Intermediate suite", func() bool {
		return handshake(p.metricsAddr, tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) == nil ||
			handshake(p.metricsAddr, tls.VersionTLS12, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) == nil
	})
	for _, suite := range []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA} {
		if err := handshake(p.metricsAddr, tls.VersionTLS12, tls.VersionTLS12, suite); err == nil {
			t.Errorf("the Intermediate profile is on, but the metrics server accepted %s", tls.CipherSuiteName(suite))
		}
	}
}
