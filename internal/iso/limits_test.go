package iso

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// scenarioTooLarge: spec.iso.maxSize refuses an announced Content-Length above it before any upload,
// cuts a chunked body off once it passes the limit and deletes its temporary upload; both are
// ISOTooLarge with the limit and the size in the message. Raising the limit lets the same image in.
func scenarioTooLarge(t *testing.T, b backend) {
	img := makeISO(testISOSize, 20)
	h := newHarness(t, b, img)
	h.maxSize = int64(len(img)) - 1

	expectTooLarge := func(what string, contains ...string) {
		t.Helper()
		uploads := b.uploads()
		_, rr := h.pass()
		h.expectOutcome(rr, OutcomeFailed)
		if h.cond.Status != "False" || h.cond.Reason != afv1.ReasonISOTooLarge || ReasonOf(rr.Err) != afv1.ReasonISOTooLarge {
			t.Fatalf("%s: condition %+v", what, h.cond)
		}
		for _, s := range append(contains, "spec.iso.maxSize", "614399 bytes") {
			if !strings.Contains(h.cond.Message, s) {
				t.Fatalf("%s: message %q does not say %q", what, h.cond.Message, s)
			}
		}
		if last := h.events[len(h.events)-1]; last.Type != EventTypeWarning || last.Reason != afv1.ReasonISORefreshFailed || !strings.HasPrefix(last.Message, afv1.ReasonISOTooLarge) {
			t.Fatalf("%s: event %+v", what, last)
		}
		if st := h.status(); st.Path != "" || !strings.Contains(st.LastError, afv1.ReasonISOTooLarge) {
			t.Fatalf("%s: status %+v", what, st)
		}
		// Nothing is cached. Refused before reading, nothing was uploaded at all; refused mid-stream, the
		// temporary upload is deleted, but a datastore's PUT handler may still finish writing it after the
		// client gave up (the simulator did so in CI at 1e03ddd): such a leftover is a temporary name, and
		// Prune deletes it once past the grace period (the stale-temporaries scenario).
		if what == "announced" {
			h.expectOnly()
		} else {
			h.expectCached()
		}
		if what == "announced" && b.uploads() != uploads {
			t.Fatalf("announced: %d uploads started, want none (refused before reading)", b.uploads()-uploads)
		}
	}

	expectTooLarge("announced", "the server announced 600Ki (614400 bytes)")

	h.server.set(nil, "chunked")
	expectTooLarge("chunked", "more than 614399 bytes received")

	// The default limit (8Gi) lets the chunked image in.
	h.maxSize = 0
	_, rr := h.pass()
	h.expectOutcome(rr, OutcomeUploaded)
	h.expectOnly(sha(img) + ".iso")
	if h.status().SizeBytes != int64(len(img)) {
		t.Fatalf("status %+v", h.status())
	}
}

// The size limit applies to the revalidation's full answer too, and the default is 8Gi.
func TestMaxSizeDefaultAndFormatting(t *testing.T) {
	if (RefreshRequest{}).maxSize() != 8<<30 || (RefreshRequest{MaxSize: -1}).maxSize() != 8<<30 || (RefreshRequest{MaxSize: 5}).maxSize() != 5 {
		t.Fatal("MaxSize 0 or less must mean the 8Gi default")
	}
	for n, want := range map[int64]string{8 << 30: "8Gi (8589934592 bytes)", 1000: "1000 bytes", 100 << 20: "100Mi (104857600 bytes)"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	a := Job{Refresh: RefreshRequest{MaxSize: 1 << 30}}
	b := Job{Refresh: RefreshRequest{MaxSize: 2 << 30}}
	if fingerprint(a) == fingerprint(b) {
		t.Fatal("a changed size limit must be retried at once, not backed off")
	}
}

// rotatingTLSServer serves an ISO over HTTPS with the certificate of whichever private CA is current.
type rotatingTLSServer struct {
	srv  *httptest.Server
	port string
	cert atomic.Pointer[tls.Certificate]
}

func newRotatingTLSServer(t *testing.T, pki testPKI, body []byte) *rotatingTLSServer {
	t.Helper()
	s := &rotatingTLSServer{}
	s.cert.Store(&pki.serverCert)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	s.srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil }}
	s.srv.Config.ErrorLog = discardLog()
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	_, s.port, _ = net.SplitHostPort(s.srv.Listener.Addr().String())
	return s
}

// rotate switches the server to pki's certificate and drops open connections (a re-issued certificate
// is seen on the next handshake).
func (s *rotatingTLSServer) rotate(pki testPKI) {
	s.cert.Store(&pki.serverCert)
	s.srv.CloseClientConnections()
}

func (s *rotatingTLSServer) url() string {
	return "https://" + isoHost + ":" + s.port + "/images/infraenv-1/minimal.iso?api_key=" + testToken
}

// A pool's CA (spec.iso.caBundleRef) is taken as given on every request: the image host re-issued by
// another private CA is untrusted under the old bundle and trusted once the bundle holds the new CA,
// in the same Cache (no restart). An unusable bundle is named by its source, never quoted.
func TestPerRequestCARotation(t *testing.T) {
	oldCA, newCA := newTestPKI(t), newTestPKI(t)
	srv := newRotatingTLSServer(t, oldCA, makeISO(testISOSize, 43))
	cache, err := NewCache(Options{HTTP: HTTPOptions{DialContext: loopbackNames, Proxy: noProxy}})
	if err != nil {
		t.Fatal(err)
	}
	b := memBackend(t)

	rr, err := refreshOnce(t, cache, b, srv.url(), nil)
	expectReason(t, rr, err, afv1.ReasonCertificateUntrusted, "unknown authority")
	rr, err = refreshOnce(t, cache, b, srv.url(), oldCA.caPEM)
	expectReason(t, rr, err, afv1.ReasonCached)

	srv.rotate(newCA)
	rr, err = refreshOnce(t, cache, b, srv.url(), oldCA.caPEM)
	expectReason(t, rr, err, afv1.ReasonCertificateUntrusted)
	rr, err = refreshOnce(t, cache, b, srv.url(), newCA.caPEM)
	expectReason(t, rr, err, afv1.ReasonCached)

	junk := "-----BEGIN CERTIFICATE-----\nc2VjcmV0LWp1bms=\n-----END CERTIFICATE-----\n"
	req := RefreshRequest{Datacenter: b.datacenter, Datastore: b.datastore, Prefix: "trust", Source: Source{URL: srv.url()},
		CABundle: []byte(junk), CABundleSource: "ConfigMap ns/image-ca key ca.crt"}
	rr, err = cache.Refresh(t.Context(), b.client, req)
	expectNoToken(t, rr, err)
	expectReason(t, rr, err, afv1.ReasonInvalidCABundle, "ConfigMap ns/image-ca key ca.crt", "no parsable certificate")
	if strings.Contains(rr.Condition.Message, "c2VjcmV0LWp1bms") {
		t.Fatalf("the bundle's content shows in the message: %s", rr.Condition.Message)
	}
}
