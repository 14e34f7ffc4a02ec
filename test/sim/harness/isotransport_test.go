package harness_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/test/sim"
	"github.com/containeroo/agent-forge-operator/test/sim/harness"
)

func download(t *testing.T, c *http.Client, url string) error {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func TestISOOverHTTPSViolations(t *testing.T) {
	ca, err := sim.NewPrivateCA("harness test CA")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	secure := sim.NewISOServer(sim.ISOServerOptions{Size: 64 << 10, TLSConfig: cfg})
	defer secure.Close()
	if got := harness.ISOOverHTTPSViolations(secure); len(got) != 1 || !strings.Contains(got[0], "never fetched") {
		t.Errorf("before any download: %q, want the never-fetched violation", got)
	}
	trusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientTLSConfig()}}
	if err := download(t, trusting, secure.URL()); err != nil {
		t.Fatal(err)
	}
	if got := harness.ISOOverHTTPSViolations(secure); len(got) != 0 {
		t.Errorf("one download over HTTPS trusting the CA: %q, want none", got)
	}

	// A client without the CA fails its handshake: a violation, though the earlier download was fine.
	untrusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	if err := download(t, untrusting, secure.URL()); err == nil {
		t.Fatal("a client without the private CA downloaded the ISO")
	}
	deadline := time.Now().Add(5 * time.Second) // the server logs the failed handshake after the client returned
	for secure.TLSHandshakeErrors() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := harness.ISOOverHTTPSViolations(secure); len(got) != 1 || !strings.Contains(got[0], "handshakes with the ISO server failed") {
		t.Errorf("after an untrusting client: %q, want the handshake violation", got)
	}

	plain := sim.NewISOServer(sim.ISOServerOptions{Size: 64 << 10})
	defer plain.Close()
	if err := download(t, plain.HTTPClient(), plain.URL()); err != nil {
		t.Fatal(err)
	}
	got := harness.ISOOverHTTPSViolations(plain)
	if len(got) != 2 || !strings.Contains(got[0], "none of the 1 ISO downloads went over HTTPS") || !strings.Contains(got[1], "plain HTTP") {
		t.Errorf("a plain-HTTP download: %q, want no-HTTPS and plain-request violations", got)
	}
}

func TestSummaryAddsTheISOTransport(t *testing.T) {
	tr := harness.NewTracker()
	if s := tr.Summary("demo"); strings.Contains(s, "HTTPS") || !strings.HasSuffix(s, ", 0 VMs cleaned up, 0 invariant violations") {
		t.Errorf("without a transport: %q", s)
	}
	tr.SetISOTransport(harness.ISOOverHTTPS)
	want := ", 0 VMs cleaned up, ISO over HTTPS (private CA via injected bundle), 0 invariant violations"
	if s := tr.Summary("demo"); !strings.HasSuffix(s, want) {
		t.Errorf("summary %q does not end with %q", s, want)
	}
}
