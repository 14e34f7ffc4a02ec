package apifaults

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

func upstream(t *testing.T) (*rest.Config, *atomic.Int32) {
	t.Helper()
	var writes atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token passed through", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			writes.Add(1)
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, &writes
}

func do(t *testing.T, p *Proxy, method string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, p.URL.String()+"/api/v1/namespaces/x/configmaps", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := p.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestPassThroughWhileDisabled(t *testing.T) {
	cfg, writes := upstream(t)
	p, err := Start(cfg, Options{Seed: 1, LostResponse: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	if resp, body := do(t, p, http.MethodPost); resp.StatusCode != http.StatusCreated || writes.Load() != 1 {
		t.Fatalf("disabled proxy: %d %s, %d writes", resp.StatusCode, body, writes.Load())
	}
	if p.Total() != 0 {
		t.Fatalf("faults counted while disabled: %s", p)
	}
}

func TestLostResponseAfterASuccessfulWrite(t *testing.T) {
	cfg, writes := upstream(t)
	p, err := Start(cfg, Options{Seed: 1, LostResponse: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	p.SetEnabled(true)
	resp, _ := do(t, p, http.MethodPost)
	if resp.StatusCode != http.StatusInternalServerError || writes.Load() != 1 || p.Counts()[LostResponse] != 1 {
		t.Fatalf("got %d, %d upstream writes, counts %s; want 500 after one write", resp.StatusCode, writes.Load(), p)
	}
	if resp, _ := do(t, p, http.MethodGet); resp.StatusCode != http.StatusOK {
		t.Fatalf("a read got %d", resp.StatusCode)
	}
}

func TestBurstsAnswerWithRetryAfter(t *testing.T) {
	cfg, writes := upstream(t)
	p, err := Start(cfg, Options{Seed: 3, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	p.SetEnabled(true)
	for i := 0; i < 10; i++ {
		resp, _ := do(t, p, http.MethodPost)
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request %d: %d, want 429 or 503", i, resp.StatusCode)
		}
		if resp.Header.Get("Retry-After") != "1" {
			t.Fatal("no Retry-After")
		}
	}
	if writes.Load() != 0 || p.Total() != 10 {
		t.Fatalf("%d writes reached the API server, %d faults counted (%s)", writes.Load(), p.Total(), p)
	}
}

// The campaign's line reports the faults by Kinds: every kind the proxy counts must be listed there.
func TestCountedKindsAreReported(t *testing.T) {
	cfg, _ := upstream(t)
	p, err := Start(cfg, Options{Seed: 5, LostResponse: 0.3, Burst: 0.2, Slow: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	p.SetEnabled(true)
	for i := 0; i < 60; i++ {
		do(t, p, []string{http.MethodPost, http.MethodGet}[i%2])
	}
	listed := map[string]bool{}
	for _, k := range Kinds {
		listed[k] = true
	}
	if len(p.Counts()) < 3 {
		t.Fatalf("want at least 3 kinds injected, got %s", p)
	}
	for k := range p.Counts() {
		if !listed[k] {
			t.Errorf("fault kind %q is counted but not in Kinds", k)
		}
	}
}
