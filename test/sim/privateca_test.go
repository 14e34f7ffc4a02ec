package sim_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/test/sim"
)

// privateISOServer serves the ISO over HTTPS with a certificate from a fresh private CA.
func privateISOServer(t *testing.T) (*sim.ISOServer, *sim.PrivateCA) {
	t.Helper()
	ca, err := sim.NewPrivateCA("test private CA")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	s := sim.NewISOServer(sim.ISOServerOptions{Size: 64 << 10, TLSConfig: cfg})
	t.Cleanup(s.Close)
	return s, ca
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp, nil
}

func TestISOServerWithPrivateCAIsTrustedOnlyWithTheCA(t *testing.T) {
	s, ca := privateISOServer(t)
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s is not https on loopback", s.BaseURL())
	}
	// The system roots (and an empty pool) do not know the private CA: the handshake fails, nothing is served.
	for name, cfg := range map[string]*tls.Config{"system roots": {MinVersion: tls.VersionTLS12}, "other CA": otherCA(t)} {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		_, err := get(t, c, s.URL())
		var unknown x509.UnknownAuthorityError
		if err == nil || !errors.As(err, &unknown) {
			t.Errorf("%s: GET error %v, want an unknown-authority error", name, err)
		}
	}
	if s.Requests() != 0 || s.TLSHandshakes() != 0 {
		t.Errorf("untrusted clients reached the handler: %d requests, %d handshakes", s.Requests(), s.TLSHandshakes())
	}
	if !waitFor(func() bool { return s.TLSHandshakeErrors() >= 2 }) {
		t.Errorf("handshake errors %d, want 2 (both untrusting clients)", s.TLSHandshakeErrors())
	}

	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientTLSConfig()}}
	resp, err := get(t, c, s.URL())
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET trusting the CA: %v %v", resp, err)
	}
	if s.Downloads() != 1 || s.TLSDownloads() != 1 || s.PlainRequests() != 0 || s.TLSHandshakes() != 1 {
		t.Errorf("counters: %d downloads, %d over TLS, %d plain requests, %d handshakes", s.Downloads(), s.TLSDownloads(), s.PlainRequests(), s.TLSHandshakes())
	}
	if s.MinTLSVersion() < tls.VersionTLS12 {
		t.Errorf("min TLS version %x", s.MinTLSVersion())
	}

	// TLS 1.1 is refused by the server's configuration.
	old := ca.ClientTLSConfig()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if _, err := get(t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: old}}, s.URL()); err == nil {
		t.Error("a TLS 1.1 client was served")
	}
	// Plain HTTP to the HTTPS port is answered by net/http itself and never served.
	plain := strings.Replace(s.URL(), "https://", "http://", 1)
	if resp, err := get(t, &http.Client{Timeout: 10 * time.Second}, plain); err == nil && resp.StatusCode == http.StatusOK {
		t.Error("plain HTTP was served by the HTTPS server")
	}
	if s.Downloads() != 1 || s.PlainRequests() != 0 {
		t.Errorf("after TLS 1.1 and plain attempts: %d downloads, %d plain requests", s.Downloads(), s.PlainRequests())
	}
}

func TestISOServerCountsPlainDownloads(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{Size: 64 << 10})
	defer s.Close()
	if resp, err := get(t, s.HTTPClient(), s.URL()); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v", err)
	}
	if s.Downloads() != 1 || s.TLSDownloads() != 0 || s.PlainRequests() != 1 || s.MinTLSVersion() != 0 {
		t.Errorf("counters: %d downloads, %d over TLS, %d plain requests, min TLS %x", s.Downloads(), s.TLSDownloads(), s.PlainRequests(), s.MinTLSVersion())
	}
}

// otherCA is a client configuration trusting an unrelated private CA.
func otherCA(t *testing.T) *tls.Config {
	t.Helper()
	ca, err := sim.NewPrivateCA("unrelated CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca.ClientTLSConfig()
}

// waitFor polls cond for up to 5s: the server logs a failed handshake after the client already returned.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
