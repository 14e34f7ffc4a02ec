package iso

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TLS is verified: an unknown CA fails (without leaking the token), a CA bundle makes it work.
func TestHTTPClientVerifiesTLS(t *testing.T) {
	iso := makeISO(testISOSize, 30)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(iso) }))
	t.Cleanup(srv.Close)
	url := srv.URL + "/byapikey/" + testToken + "/4.16/x86_64/minimal.iso"

	plain, err := NewHTTPClient(HTTPOptions{DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := memBackend(t)
	cache, _ := NewCache(Options{HTTPClient: plain})
	req := RefreshRequest{Datacenter: "DC0", Datastore: "ds", Prefix: "p", Source: Source{URL: url}}
	res, err := cache.Refresh(t.Context(), b.client, req)
	if err == nil || res.Condition.Reason != afv1.ReasonCertificateUntrusted || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server: %v %+v", err, res.Condition)
	}
	if strings.Contains(err.Error(), testToken) || strings.Contains(res.Condition.Message, testToken) {
		t.Fatalf("token leaked: %v", err)
	}

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	trusted, err := NewHTTPClient(HTTPOptions{CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	cache, _ = NewCache(Options{HTTPClient: trusted})
	res, err = cache.Refresh(t.Context(), b.client, req)
	if err != nil || res.Outcome != OutcomeUploaded {
		t.Fatalf("trusted server: %v", err)
	}
	if res.Status.URL != srv.URL+"/byapikey/REDACTED/4.16/x86_64/minimal.iso" {
		t.Fatalf("status url %q", res.Status.URL)
	}
	if _, err := NewHTTPClient(HTTPOptions{CABundle: []byte("nope")}); err == nil {
		t.Fatal("a CA bundle without certificates must be refused")
	}
}
