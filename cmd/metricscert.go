package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// metricsCertificate picks the metrics serving certificate per TLS handshake: the mounted files once
// they exist (reloaded when they change), a self-signed certificate until then. OpenShift's service-ca
// writes its Secret after the Service exists, so the files may appear after the manager started, and
// off OpenShift they never do.
type metricsCertificate struct {
	ctx               context.Context
	log               logr.Logger
	certPath, keyPath string
	selfSigned        tls.Certificate

	mu      sync.Mutex
	watcher *certwatcher.CertWatcher
}

func newMetricsCertificate(ctx context.Context, log logr.Logger, dir, certName, keyName string) (*metricsCertificate, error) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, fmt.Errorf("generating the self-signed metrics certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the self-signed metrics certificate: %w", err)
	}
	m := &metricsCertificate{ctx: ctx, log: log, selfSigned: pair,
		certPath: filepath.Join(dir, certName), keyPath: filepath.Join(dir, keyName)}
	if m.mounted() == nil {
		log.Info("no metrics serving certificate yet; serving a self-signed one until it appears", "path", dir)
	}
	return m, nil
}

// GetCertificate is the metrics server's tls.Config.GetCertificate.
func (m *metricsCertificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if w := m.mounted(); w != nil {
		if c, err := w.GetCertificate(hello); err == nil && c != nil {
			return c, nil
		}
	}
	return &m.selfSigned, nil
}

// mounted returns the watcher of the mounted certificate, starting it when the files first exist.
func (m *metricsCertificate) mounted() *certwatcher.CertWatcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watcher != nil || !fileExists(m.certPath) || !fileExists(m.keyPath) {
		return m.watcher
	}
	w, err := certwatcher.New(m.certPath, m.keyPath)
	if err != nil {
		// Possibly caught mid-write; the next handshake tries again.
		m.log.Error(err, "metrics serving certificate not loadable yet; still serving the self-signed one", "path", m.certPath)
		return nil
	}
	m.watcher = w
	go func() {
		if err := w.Start(m.ctx); err != nil {
			m.log.Error(err, "watching the metrics serving certificate failed; changes are no longer picked up", "path", m.certPath)
		}
	}()
	m.log.Info("serving metrics with the mounted certificate", "path", m.certPath)
	return w
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
