package iso

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

func noProxy(*http.Request) (*url.URL, error) { return nil, nil }

func refreshOnce(t *testing.T, cache *Cache, b backend, rawURL string, ca []byte) (RefreshResult, error) {
	t.Helper()
	// A plain-HTTP test server is opted in explicitly, as a pool would; plainhttp_test.go covers the refusal.
	req := RefreshRequest{Datacenter: b.datacenter, Datastore: b.datastore, Prefix: "trust", Source: Source{URL: rawURL}, CABundle: ca,
		AllowPlainHTTP: strings.HasPrefix(rawURL, "http://")}
	rr, err := cache.Refresh(t.Context(), b.client, req)
	expectNoToken(t, rr, err)
	return rr, err
}

func expectReason(t *testing.T, rr RefreshResult, err error, reason string, contains ...string) {
	t.Helper()
	if reason == afv1.ReasonCached {
		if err != nil || rr.Condition.Reason != reason {
			t.Fatalf("want success, got %v (%+v)", err, rr.Condition)
		}
		return
	}
	if err == nil || rr.Condition.Reason != reason || rr.Condition.Status != "False" || ReasonOf(err) != reason {
		t.Fatalf("want %s, got %v (%+v)", reason, err, rr.Condition)
	}
	if !IsFailureReason(reason) || !strings.Contains(rr.Status.LastError, reason) {
		t.Fatalf("%s must be a failure reason recorded in lastError: %q", reason, rr.Status.LastError)
	}
	for _, s := range contains {
		if !strings.Contains(rr.Condition.Message, s) {
			t.Fatalf("message %q does not say %q", rr.Condition.Message, s)
		}
	}
}

// The trusted CA bundle file (the OpenShift-injected ConfigMap mount) is read for every download: the
// same Cache fails with CertificateUntrusted, then succeeds once the bundle holds the private CA,
// and follows every later change of the file (invalid content, another CA, the file removed).
func TestTrustedBundleFileIsPickedUpWithoutRestart(t *testing.T) {
	pki := newTestPKI(t)
	srv := serveISOOverTLS(t, pki, makeISO(testISOSize, 41))
	bundle := filepath.Join(t.TempDir(), "tls-ca-bundle.pem")
	cache, err := NewCache(Options{TrustedCABundleFile: bundle, HTTP: HTTPOptions{DialContext: loopbackNames, Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}
	b := memBackend(t)
	write := func(content []byte) {
		t.Helper()
		// As the kubelet updates a ConfigMap volume: a new file renamed into place.
		tmp := bundle + ".tmp"
		if err := os.WriteFile(tmp, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, bundle); err != nil {
			t.Fatal(err)
		}
	}

	rr, err := refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonCertificateUntrusted, "unknown authority", "trusted CA bundle", isoHost)

	write([]byte("this is not PEM\n"))
	rr, err = refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonInvalidCABundle, bundle, "no PEM block")

	write(pki.caPEM)
	rr, err = refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonCached)
	if rr.Outcome != OutcomeUploaded || srv.hits.Load() != 1 {
		t.Fatalf("outcome %s, server hits %d", rr.Outcome, srv.hits.Load())
	}
	if want := "https://" + isoHost + ":" + srv.port + "/images/infraenv-1/minimal.iso"; rr.Status.URL != want {
		t.Fatalf("status url %q, want %q", rr.Status.URL, want)
	}

	// Same size, other content: a bundle that no longer holds our CA takes trust away again.
	write(newTestPKI(t).caPEM)
	rr, err = refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonCertificateUntrusted)

	if err := os.Remove(bundle); err != nil {
		t.Fatal(err)
	}
	rr, err = refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonCertificateUntrusted)
}

// A request's own CA (a pool's CA reference) is trusted for that request only.
func TestPerRequestCABundle(t *testing.T) {
	pki := newTestPKI(t)
	srv := serveISOOverTLS(t, pki, makeISO(testISOSize, 42))
	cache, err := NewCache(Options{HTTP: HTTPOptions{DialContext: loopbackNames, Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}
	b := memBackend(t)
	rr, err := refreshOnce(t, cache, b, srv.url(), pki.caPEM)
	expectReason(t, rr, err, afv1.ReasonCached)
	rr, err = refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonCertificateUntrusted)
	rr, err = refreshOnce(t, cache, b, srv.url(), []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"))
	expectReason(t, rr, err, afv1.ReasonInvalidCABundle, "the pool's CA", "no parsable certificate")

	fixed, err := NewCache(Options{HTTPClient: http.DefaultClient})
	if err != nil {
		t.Fatal(err)
	}
	rr, err = refreshOnce(t, fixed, b, srv.url(), pki.caPEM)
	expectReason(t, rr, err, afv1.ReasonInvalidCABundle, "per-pool CA")

	if _, err := NewCache(Options{HTTP: HTTPOptions{CABundle: []byte("junk")}}); err == nil {
		t.Fatal("a static CA bundle without certificates must be refused at construction")
	}
}

// Every request has a deadline up to its response headers, also when the peer accepts the
// connection and then says nothing.
func TestHeaderDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	cache, err := NewCache(Options{HeaderTimeout: 300 * time.Millisecond, HTTP: HTTPOptions{Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rr, err := refreshOnce(t, cache, memBackend(t), "http://"+ln.Addr().String()+"/minimal.iso?api_key="+testToken, nil)
	expectReason(t, rr, err, afv1.ReasonDownloadFailed, "no response within 300ms")
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the deadline did not hold: %s", d)
	}
}
