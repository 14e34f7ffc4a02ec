package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

// The injected trust bundle as the operator's bundle ships it (config/manager/trusted_ca_bundle.yaml
// with config/default's namePrefix) and as the Deployment mounts it (volume item ca-bundle.crt ->
// tls-ca-bundle.pem under /etc/pki/ca-trust/extracted/pem).
const (
	trustBundleConfigMap = "agent-forge-operator-trusted-ca-bundle"
	injectLabel          = "config.openshift.io/inject-trusted-cabundle"
	bundleKey            = "ca-bundle.crt"
	bundleFile           = "tls-ca-bundle.pem"
	// clusterSyncInterval is how often the demo's CNO and kubelet look at the ConfigMaps again.
	clusterSyncInterval = 500 * time.Millisecond
	trustReadyTimeout   = 30 * time.Second
)

// newISOTrust makes the private CA and the ISO server's TLS configuration (TLS 1.2+). The CA exists only
// in this process until the demo's CNO puts it into the injected ConfigMap.
func newISOTrust() (*sim.PrivateCA, *tls.Config, error) {
	ca, err := sim.NewPrivateCA("agent-forge demo private CA")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ca.ServerTLSConfig()
	if err != nil {
		return nil, nil, err
	}
	return ca, cfg, nil
}

// trustBundle starts the demo's CNO and kubelet for the operator's namespace and returns the projected
// bundle file (in the harness's temp dir, laid out like the Deployment's mount).
func (d *demo) trustBundle(ctx context.Context) (string, error) {
	id, err := d.h.OperatorIdentity(ctx)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithCancel(ctx)
	d.stopCluster = cancel
	path, err := d.injectTrustBundle(cctx, id.Namespace, d.ca, filepath.Join(d.h.TempDir(), "etc/pki/ca-trust/extracted/pem"))
	if err != nil {
		return "", err
	}
	d.v.println("==> cluster trust: ConfigMap %s/%s created empty with label %s=true (as the bundle ships it); the Cluster Network Operator stand-in filled %s with the cluster trust bundle (here only the demo's private CA, %q, ECDSA P-256, generated in memory); the kubelet stand-in projects it to %s and rewrites it on every change",
		id.Namespace, trustBundleConfigMap, injectLabel, bundleKey, d.ca.Certificate().Subject.CommonName, path)
	d.v.println("    the ISO server (%s, TLS 1.2+) presents a certificate for 127.0.0.1/localhost signed by that CA; the manager gets it only through --trusted-ca-bundle (no SSL_CERT_FILE, no system root change, no insecure flag for the ISO)",
		d.h.ISO.BaseURL())
	return path, nil
}

// checkISOTransport checks, from the ISO server's counters, that the operator fetched the ISO only over
// HTTPS trusting the private CA; the summary says so when it did.
func (d *demo) checkISOTransport() {
	iso := d.h.ISO
	version := "none"
	if v := iso.MinTLSVersion(); v != 0 {
		version = tls.VersionName(v)
	}
	d.v.println("==> ISO server: %d downloads, %d of them over HTTPS (lowest version %s), %d TLS connections, %d failed handshakes, %d plain-HTTP requests",
		iso.Downloads(), iso.TLSDownloads(), version, iso.TLSHandshakes(), iso.TLSHandshakeErrors(), iso.PlainRequests())
	violations := harness.ISOOverHTTPSViolations(iso)
	for _, v := range violations {
		d.t.Violate("%s", v)
	}
	if len(violations) == 0 {
		d.t.SetISOTransport(harness.ISOOverHTTPS)
	}
}

// injectTrustBundle plays the cluster around the operator's trust bundle and returns the file the
// manager's --trusted-ca-bundle points at:
//   - OLM/kustomize: the empty ConfigMap with the inject label, as the bundle ships it;
//   - OpenShift's Cluster Network Operator: fills ca-bundle.crt of every ConfigMap with that label with
//     the cluster trust bundle (here the private CA alone; the real one adds the system CAs and
//     proxy/cluster's trustedCA) and keeps it filled;
//   - the kubelet: projects the ConfigMap's ca-bundle.crt into the pod's volume as tls-ca-bundle.pem,
//     rewriting the file (atomically: temp file + rename) whenever the ConfigMap changes.
//
// The last two keep running until ctx ends; this returns once the file holds the CA.
func (d *demo) injectTrustBundle(ctx context.Context, namespace string, ca *sim.PrivateCA, dir string) (string, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trustBundleConfigMap, Namespace: namespace,
		Labels: map[string]string{injectLabel: "true"}}}
	if err := d.h.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ConfigMap %s/%s: %w", namespace, trustBundleConfigMap, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, bundleFile)
	c := &cluster{c: d.h.Client, bundle: ca.PEM(), key: client.ObjectKeyFromObject(cm), path: path}
	ready := make(chan struct{})
	go c.run(ctx, ready)
	select {
	case <-ready:
		return path, nil
	case <-time.After(trustReadyTimeout):
		return "", fmt.Errorf("the trust bundle was not projected to %s within %s (last error: %w)", path, trustReadyTimeout, c.lastErr())
	case <-ctx.Done():
		return "", errStopped
	}
}

// cluster is the demo's Cluster Network Operator and kubelet for the trust bundle.
type cluster struct {
	c      client.Client
	bundle []byte
	key    client.ObjectKey
	path   string

	mu  sync.Mutex
	err error // the latest pass's error
}

func (c *cluster) run(ctx context.Context, ready chan<- struct{}) {
	signalled := false
	for {
		err := c.sync(ctx)
		c.setErr(err)
		if err == nil && !signalled {
			close(ready)
			signalled = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(clusterSyncInterval):
		}
	}
}

// sync runs one pass of the CNO (fill every labelled ConfigMap) and the kubelet (project ours).
func (c *cluster) sync(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var labelled corev1.ConfigMapList
	if err := c.c.List(sctx, &labelled, client.MatchingLabels{injectLabel: "true"}); err != nil {
		return fmt.Errorf("CNO: listing labelled ConfigMaps: %w", err)
	}
	for i := range labelled.Items {
		cm := &labelled.Items[i]
		if cm.Data[bundleKey] == string(c.bundle) && len(cm.Data) == 1 {
			continue
		}
		// The CNO owns the ConfigMap's data: other keys are dropped.
		cm.Data = map[string]string{bundleKey: string(c.bundle)}
		if err := c.c.Update(sctx, cm); err != nil {
			return fmt.Errorf("CNO: filling %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	var cm corev1.ConfigMap
	if err := c.c.Get(sctx, c.key, &cm); err != nil {
		return fmt.Errorf("kubelet: reading %s: %w", c.key, err)
	}
	data, ok := cm.Data[bundleKey]
	if !ok {
		return fmt.Errorf("kubelet: %s has no %s yet", c.key, bundleKey)
	}
	if cur, err := os.ReadFile(c.path); err == nil && bytes.Equal(cur, []byte(data)) {
		return nil
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("kubelet: %w", err)
	}
	return nil
}

func (c *cluster) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// lastErr is the latest pass's error; before any pass finished, that none did.
func (c *cluster) lastErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return errors.New("no pass finished yet")
	}
	return c.err
}
