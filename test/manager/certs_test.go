package manager

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestManagerServesMetricsWithTheMountedCertificate covers --metrics-cert-path as OpenShift's service-ca
// uses it: until the Secret's files exist (service-ca writes them after the Service, possibly after the
// pod started; never off OpenShift) the manager serves a self-signed certificate; once they appear, a
// scraper that trusts only the issuing CA verifies the endpoint; a rotated certificate is served, all
// without a restart.
func TestManagerServesMetricsWithTheMountedCertificate(t *testing.T) {
	ns := createNamespace(t, env, "metrics-cert")
	token := serviceAccountToken(t, ns, "metrics-reader", true)
	dir := t.TempDir()

	p := startManager(t, env, ns, "--metrics-cert-path="+dir)
	p.waitForProbes(t)
	url := fmtURL("https", p.metricsAddr, "/metrics")
	p.eventually(t, startTimeout, "self-signed metrics answer 200", func() bool {
		code, _, err := get(tlsClient, url, token)
		return err == nil && code == http.StatusOK
	})
	if !strings.Contains(p.output.String(), "serving a self-signed one until it appears") {
		t.Errorf("the self-signed fallback was not logged")
	}

	first := newTestCA(t, "service-ca-1")
	if _, _, err := get(first.client(), url, token); err == nil {
		t.Fatalf("a CA that issued nothing verifies the self-signed endpoint")
	}
	first.issueServingCert(t, dir)
	p.eventually(t, startTimeout, "the certificate that appeared is served and verifies against its CA", func() bool {
		code, _, err := get(first.client(), url, token)
		return err == nil && code == http.StatusOK
	})

	second := newTestCA(t, "service-ca-2")
	second.issueServingCert(t, dir)
	p.eventually(t, startTimeout, "the rotated certificate is served", func() bool {
		code, _, err := get(second.client(), url, token)
		return err == nil && code == http.StatusOK
	})
	if _, _, err := get(first.client(), url, token); err == nil {
		t.Errorf("the old CA still verifies the endpoint after rotation")
	}
	if code := p.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

// issueServingCert writes tls.crt and tls.key for 127.0.0.1, each replaced by a rename the way a
// mounted Secret's files change.
func (ca *testCA) issueServingCert(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "metrics"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeAtomically(t, filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	writeAtomically(t, filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// client trusts only this CA and verifies the server's name (127.0.0.1).
func (ca *testCA) client() *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		// A new connection per request: a kept-alive one would keep the old certificate.
		DisableKeepAlives: true,
	}}
}

func writeAtomically(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
