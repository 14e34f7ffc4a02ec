package iso

import (
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/tlstrust/tlstrusttest"
)

// refreshURL runs one refresh of rawURL with the given plain-HTTP policy and trusted CA.
func refreshURL(t *testing.T, cache *Cache, rawURL string, allowPlain bool, ca []byte) (RefreshResult, error) {
	t.Helper()
	b := memBackend(t)
	req := RefreshRequest{Datacenter: b.datacenter, Datastore: b.datastore, Prefix: "plain", Source: Source{URL: rawURL},
		CABundle: ca, AllowPlainHTTP: allowPlain}
	rr, err := cache.Refresh(t.Context(), b.client, req)
	expectNoToken(t, rr, err)
	return rr, err
}

// expectRefusalEvent fails unless rr carries one Warning ISORefreshFailed Event naming reason.
func expectRefusalEvent(t *testing.T, rr RefreshResult, reason string) {
	t.Helper()
	for _, e := range rr.Events {
		if e.Type == EventTypeWarning && e.Reason == afv1.ReasonISORefreshFailed && strings.Contains(e.Message, reason) {
			return
		}
	}
	t.Fatalf("no Warning %s Event naming %s in %+v", afv1.ReasonISORefreshFailed, reason, rr.Events)
}

// TestPlainHTTPNeedsTheOptIn: an http:// ISO URL is refused before any request unless the pool sets
// spec.iso.allowPlainHTTP (ISOReady=False PlainHTTPRefused, a Warning Event, the server never asked);
// with the opt-in it downloads.
func TestPlainHTTPNeedsTheOptIn(t *testing.T) {
	srv := newISOServer(t, makeISO(testISOSize, 7))
	cache, err := NewCache(Options{HTTP: HTTPOptions{Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := refreshURL(t, cache, srv.url(testToken), false, nil)
	expectReason(t, rr, err, afv1.ReasonPlainHTTPRefused, "http://", "spec.iso.allowPlainHTTP")
	expectRefusalEvent(t, rr, afv1.ReasonPlainHTTPRefused)
	srv.mu.Lock()
	asked := srv.requests
	srv.mu.Unlock()
	if asked != 0 {
		t.Fatalf("the plain-HTTP server was asked %d times: nothing may be requested before the opt-in", asked)
	}

	rr, err = refreshURL(t, cache, srv.url(testToken), true, nil)
	expectReason(t, rr, err, afv1.ReasonCached)
}

// TestRedirectToPlainHTTPIsRefused: an https download redirected to http:// fails with PlainHTTPRefused
// and never reaches the http server; with the pool's opt-in the redirect is followed.
func TestRedirectToPlainHTTPIsRefused(t *testing.T) {
	plain := newISOServer(t, makeISO(testISOSize, 8))
	target := plain.url(testToken)
	redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirector.Certificate().Raw})
	cache, err := NewCache(Options{HTTP: HTTPOptions{Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}
	httpsURL := redirector.URL + "/images/minimal.iso?api_key=" + testToken

	rr, err := refreshURL(t, cache, httpsURL, false, ca)
	expectReason(t, rr, err, afv1.ReasonPlainHTTPRefused, "redirected", "spec.iso.allowPlainHTTP")
	expectRefusalEvent(t, rr, afv1.ReasonPlainHTTPRefused)
	plain.mu.Lock()
	asked := plain.requests
	plain.mu.Unlock()
	if asked != 0 {
		t.Fatalf("the downgrade target was asked %d times", asked)
	}

	rr, err = refreshURL(t, cache, httpsURL, true, ca)
	expectReason(t, rr, err, afv1.ReasonCached)
}

// TestISOHostByIPLiteralIsVerifiedAgainstItsIP: an image host reached by https://127.0.0.1 whose
// certificate, signed by a trusted CA, names only another host is refused (CertificateNameMismatch,
// nothing downloaded); the same CA's certificate with 127.0.0.1 in its IP SANs is accepted.
func TestISOHostByIPLiteralIsVerifiedAgainstItsIP(t *testing.T) {
	ca := tlstrusttest.NewCA(t)
	body := makeISO(testISOSize, 9)
	serve := func(cert tls.Certificate) (string, *atomic.Int64) {
		var hits atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = w.Write(body)
		}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		srv.Config.ErrorLog = discardLog()
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.URL + "/images/minimal.iso?api_key=" + testToken, &hits // https://127.0.0.1:port/...
	}
	cache, err := NewCache(Options{HTTP: HTTPOptions{Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}

	wrongURL, wrongHits := serve(ca.Server(t, []string{"images.example.com"}))
	rr, err := refreshURL(t, cache, wrongURL, false, ca.PEM)
	expectReason(t, rr, err, afv1.ReasonCertificateNameMismatch, "127.0.0.1", "IP SANs")
	expectRefusalEvent(t, rr, afv1.ReasonCertificateNameMismatch)
	if n := wrongHits.Load(); n != 0 {
		t.Fatalf("the impostor served %d requests", n)
	}

	rightURL, rightHits := serve(ca.Server(t, []string{"images.example.com"}, net.IPv4(127, 0, 0, 1)))
	rr, err = refreshURL(t, cache, rightURL, false, ca.PEM)
	expectReason(t, rr, err, afv1.ReasonCached)
	if rightHits.Load() == 0 {
		t.Fatal("the image host was never asked")
	}
}
