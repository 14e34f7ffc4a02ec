package sim_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/test/sim"
)

func fetch(t *testing.T, s *sim.ISOServer, rawURL string, header http.Header) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func TestISOServerServesADeterministicISOImage(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{Seed: 7, Size: 200 << 10})
	defer s.Close()
	resp, body, err := fetch(t, s, s.URL(), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp.Status, err)
	}
	if int64(len(body)) != s.Size() || string(body[sim.ISOMagicOffset:sim.ISOMagicOffset+5]) != "CD001" {
		t.Fatalf("not an ISO-looking image of %d bytes: len %d magic %q", s.Size(), len(body), body[sim.ISOMagicOffset:sim.ISOMagicOffset+5])
	}
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != s.SHA256() || !bytes.Equal(body, s.Content()) {
		t.Error("served bytes differ from SHA256()/Content()")
	}
	other := sim.NewISOServer(sim.ISOServerOptions{Seed: 7, Size: 200 << 10})
	defer other.Close()
	if other.SHA256() != s.SHA256() {
		t.Error("same seed and size gave different content")
	}
	s.SetContent(8, 200<<10)
	if other.SHA256() == s.SHA256() {
		t.Error("SetContent did not change the content")
	}
	if s.Downloads() != 1 || s.Requests() != 1 {
		t.Errorf("counters: %d downloads, %d requests", s.Downloads(), s.Requests())
	}
}

func TestISOServerChecksTheToken(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{Token: "secret-1"})
	defer s.Close()
	u, _ := url.Parse(s.URL())
	if u.Query().Get("api_key") != "secret-1" {
		t.Fatalf("URL has no api_key: %s", u.Redacted())
	}
	q := u.Query()
	q.Set("api_key", "wrong")
	u.RawQuery = q.Encode()
	if resp, _, _ := fetch(t, s, u.String(), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %s", resp.Status)
	}
	if resp, _, _ := fetch(t, s, s.BaseURL(), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %s", resp.Status)
	}
	old := s.URL()
	newURL := s.RotateToken("secret-2")
	if resp, _, _ := fetch(t, s, old, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("rotated-out token: %s", resp.Status)
	}
	if resp, _, _ := fetch(t, s, newURL, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("new token: %s", resp.Status)
	}
	if s.Unauthorized() != 3 {
		t.Errorf("unauthorized = %d", s.Unauthorized())
	}
}

func TestISOServerFailureModes(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{Size: 256 << 10, SlowDelay: time.Millisecond})
	defer s.Close()
	s.SetMode(sim.ISONotFound)
	if resp, _, _ := fetch(t, s, s.URL(), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("404 mode: %s", resp.Status)
	}
	s.SetMode(sim.ISOServerError)
	if resp, _, _ := fetch(t, s, s.URL(), nil); resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("500 mode: %s", resp.Status)
	}
	s.SetMode(sim.ISOTruncated)
	resp, body, err := fetch(t, s, s.URL(), nil)
	if resp.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) || int64(len(body)) >= s.Size() {
		t.Errorf("truncated mode: %s, %d of %d bytes, err %v", resp.Status, len(body), s.Size(), err)
	}
	s.SetMode(sim.ISOSlow)
	resp, body, err = fetch(t, s, s.URL(), nil)
	if err != nil || resp.StatusCode != http.StatusOK || int64(len(body)) != s.Size() {
		t.Errorf("slow mode: %s, %d bytes, err %v", resp.Status, len(body), err)
	}
}

func TestISOServerValidatorsAndRanges(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{Size: 100 << 10, ETag: true, LastModified: true})
	defer s.Close()
	resp, _, _ := fetch(t, s, s.URL(), nil)
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if etag == "" || lastMod == "" {
		t.Fatalf("validators missing: %v", resp.Header)
	}
	if resp, _, _ := fetch(t, s, s.URL(), http.Header{"If-None-Match": {etag}}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %s", resp.Status)
	}
	if resp, _, _ := fetch(t, s, s.URL(), http.Header{"If-Modified-Since": {lastMod}}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since: %s", resp.Status)
	}
	resp, body, _ := fetch(t, s, s.URL(), http.Header{"Range": {"bytes=32769-32773"}})
	if resp.StatusCode != http.StatusPartialContent || string(body) != "CD001" {
		t.Errorf("range: %s %q", resp.Status, body)
	}
	s.SetContent(99, 100<<10)
	resp, _, _ = fetch(t, s, s.URL(), http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == etag || resp.Header.Get("Last-Modified") == lastMod {
		t.Errorf("after SetContent: %s etag %q last-modified %q", resp.Status, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"))
	}
}

func TestISOServerOverTLS(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{TLS: true})
	defer s.Close()
	if len(s.CertificatePEM()) == 0 {
		t.Fatal("no certificate")
	}
	if resp, _, err := fetch(t, s, s.URL(), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("TLS GET: %v", err)
	}
}

func TestISOServerAnswersLikeTheImageService(t *testing.T) {
	s := sim.NewISOServer(sim.ISOServerOptions{Size: 100 << 10})
	defer s.Close()
	head := func(header http.Header) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, s.URL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	resp := head(nil)
	lastMod := resp.Header.Get("Last-Modified")
	if resp.StatusCode != http.StatusOK || resp.ContentLength != s.Size() || lastMod == "" || resp.Header.Get("ETag") != "" {
		t.Fatalf("HEAD: %s, length %d, Last-Modified %q, ETag %q", resp.Status, resp.ContentLength, lastMod, resp.Header.Get("ETag"))
	}
	if resp := head(http.Header{"If-Modified-Since": {lastMod}}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("HEAD If-Modified-Since: %s", resp.Status)
	}
	s.RotateToken("renewed")
	if resp := head(http.Header{"If-Modified-Since": {lastMod}}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("a token renewal changed the image's Last-Modified: %s", resp.Status)
	}
	s.SetContent(5, 100<<10)
	if resp := head(http.Header{"If-Modified-Since": {lastMod}}); resp.StatusCode != http.StatusOK || resp.Header.Get("Last-Modified") == lastMod {
		t.Errorf("after SetContent: %s, Last-Modified %q", resp.Status, resp.Header.Get("Last-Modified"))
	}
	if s.Heads() != 4 || s.Downloads() != 0 {
		t.Errorf("%d HEADs, %d downloads; want 4 and 0", s.Heads(), s.Downloads())
	}

	old := sim.NewISOServer(sim.ISOServerOptions{Size: 100 << 10, Validators: sim.ISOLastModifiedPerRequest})
	defer old.Close()
	resp, _, _ = fetch(t, old, old.URL(), nil)
	lm, errLM := http.ParseTime(resp.Header.Get("Last-Modified"))
	date, errDate := http.ParseTime(resp.Header.Get("Date"))
	if errLM != nil || errDate != nil || date.Sub(lm) > time.Second || lm.Sub(date) > time.Second {
		t.Errorf("per-request Last-Modified %q, Date %q", resp.Header.Get("Last-Modified"), resp.Header.Get("Date"))
	}
	none := sim.NewISOServer(sim.ISOServerOptions{Size: 100 << 10, Validators: sim.ISONoLastModified})
	defer none.Close()
	if resp, _, _ := fetch(t, none, none.URL(), nil); resp.Header.Get("Last-Modified") != "" {
		t.Errorf("Last-Modified %q", resp.Header.Get("Last-Modified"))
	}
}
