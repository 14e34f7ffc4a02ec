package iso

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"sync"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// maxCABundleBytes bounds what is read of a CA bundle (an OpenShift trusted bundle is ~250 KiB).
const maxCABundleBytes = 16 << 20

// ProxyConnectError is a proxy's refusal of a CONNECT tunnel. It names the proxy by host only (a
// proxy URL may carry credentials).
type ProxyConnectError struct {
	ProxyHost string
	Status    string
}

func (e *ProxyConnectError) Error() string {
	return fmt.Sprintf("proxy %s refused CONNECT: %s", e.ProxyHost, e.Status)
}

// refuseNon2xxConnect turns a non-2xx answer to CONNECT into a *ProxyConnectError (net/http would
// report only the status text).
func refuseNon2xxConnect(_ context.Context, proxyURL *url.URL, _ *http.Request, resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	host := ""
	if proxyURL != nil {
		host = proxyURL.Host
	}
	return &ProxyConnectError{ProxyHost: host, Status: resp.Status}
}

// requestTrace records, for one request, which proxy was chosen and how far the connection got, so
// that a failure between the proxy's TCP connect and the TLS handshake is known to be the CONNECT.
type requestTrace struct {
	mu                      sync.Mutex
	proxy                   *url.URL
	proxyDialed, tlsStarted bool
	gotConn                 bool
}

type traceKey struct{}

// tracedProxy records the proxy chosen for a traced request.
func tracedProxy(proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		u, err := proxy(req)
		if tr, ok := req.Context().Value(traceKey{}).(*requestTrace); ok && err == nil {
			tr.mu.Lock()
			tr.proxy = u
			tr.mu.Unlock()
		}
		return u, err
	}
}

// withTrace attaches a requestTrace to ctx.
func withTrace(ctx context.Context) (context.Context, *requestTrace) {
	tr := &requestTrace{}
	ctx = context.WithValue(ctx, traceKey{}, tr)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			if err == nil && tr.proxy != nil {
				tr.proxyDialed = true
			}
		},
		TLSHandshakeStart: func() {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.tlsStarted = true
		},
		GotConn: func(httptrace.GotConnInfo) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			tr.gotConn = true
		},
	}), tr
}

// connectDropped reports a request through a proxy that failed after the proxy accepted the TCP
// connection and before any TLS with the image host: the proxy dropped the CONNECT.
func (tr *requestTrace) connectDropped(target *url.URL) bool {
	if tr == nil || target == nil || target.Scheme != "https" {
		return false
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.proxy != nil && tr.proxyDialed && !tr.tlsStarted && !tr.gotConn
}

// classify maps a failed request to its ISOReady reason, and says what happened when the error's own
// text does not (a proxy that closed the CONNECT shows only as EOF).
func classify(err error, tr *requestTrace, target *url.URL) (reason, detail string) {
	var refused *ProxyConnectError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var plain *PlainHTTPError
	var op *net.OpError
	switch {
	case errors.As(err, &refused):
		return afv1.ReasonProxyRefused, ""
	case errors.As(err, &unknownCA):
		return afv1.ReasonCertificateUntrusted, ""
	case errors.As(err, &hostname):
		return afv1.ReasonCertificateNameMismatch, ""
	case errors.As(err, &plain):
		return afv1.ReasonPlainHTTPRefused, ""
	case errors.As(err, &op) && op.Op == "proxyconnect":
		return afv1.ReasonProxyUnreachable, ""
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return afv1.ReasonDownloadFailed, ""
	case tr.connectDropped(target):
		return afv1.ReasonProxyRefused, " (the proxy closed the connection without answering CONNECT)"
	}
	return afv1.ReasonDownloadFailed, ""
}

// ReasonOf returns the ISOReady reason of a Refresh error (afv1.ReasonDownloadFailed when it
// carries none).
func ReasonOf(err error) string {
	var f *refreshFailure
	if errors.As(err, &f) {
		return f.reason
	}
	return afv1.ReasonDownloadFailed
}

// hint is what a failure's message adds so that the user knows where to look.
func hint(reason string) string {
	switch reason {
	case afv1.ReasonCertificateUntrusted:
		return "; the operator does not trust the image host's certificate authority: add it to the cluster's trusted CA bundle (injected into the operator's trusted-ca-bundle ConfigMap) or to the pool's CA"
	case afv1.ReasonCertificateNameMismatch:
		return "; the image host's certificate does not name the host in the ISO URL (for an IP address it must be in the certificate's IP SANs): fix the certificate or the InfraEnv's image service URL"
	case afv1.ReasonProxyRefused:
		return "; the HTTPS_PROXY/HTTP_PROXY proxy refused the request: allow the image host on the proxy or add it to NO_PROXY"
	case afv1.ReasonProxyUnreachable:
		return "; the proxy named by HTTPS_PROXY/HTTP_PROXY cannot be reached"
	case afv1.ReasonISOTooLarge:
		return "; raise spec.iso.maxSize if the image is meant to be this large"
	}
	return ""
}

// trustStore builds the download clients: one per combination of trusted-bundle-file content and
// per-request CA, so that a changed bundle takes effect on the next download without a restart.
type trustStore struct {
	base HTTPOptions
	file string

	mu      sync.Mutex
	clients map[string]*http.Client
	order   []string
}

// maxTrustClients bounds the clients kept (each holds idle connections).
const maxTrustClients = 8

// caBundleError is an unusable CA bundle; its message names the source, never the content.
type caBundleError struct{ msg string }

func (e *caBundleError) Error() string { return e.msg }

// client returns the client trusting the system roots, base.CABundle, the bundle file as it is now
// and extraPEM. The file is read on every call (a few hundred KiB, once per download) and keyed by
// its content hash: a rewritten ConfigMap mount is picked up whatever its mtime says.
func (s *trustStore) client(extraPEM []byte, source string) (*http.Client, error) {
	fileBundle, err := readCABundleFile(s.file)
	if err != nil {
		return nil, err
	}
	if err := checkPEM(fileBundle, "trusted CA bundle "+s.file); err != nil {
		return nil, err
	}
	if source == "" {
		source = "the pool's CA"
	}
	if err := checkPEM(extraPEM, source); err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, part := range [][]byte{fileBundle, extraPEM} {
		sum := sha256.Sum256(part)
		h.Write(sum[:])
	}
	key := hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[key]; ok {
		return c, nil
	}
	o := s.base
	o.CABundle = bytes.Join([][]byte{s.base.CABundle, fileBundle, extraPEM}, []byte("\n"))
	if len(bytes.TrimSpace(o.CABundle)) == 0 {
		o.CABundle = nil
	}
	c, err := NewHTTPClient(o)
	if err != nil {
		return nil, &caBundleError{msg: err.Error()}
	}
	if s.clients == nil {
		s.clients = map[string]*http.Client{}
	}
	s.clients[key] = c
	s.order = append(s.order, key)
	if len(s.order) > maxTrustClients {
		old := s.order[0]
		s.order = s.order[1:]
		s.clients[old].CloseIdleConnections()
		delete(s.clients, old)
	}
	return c, nil
}

// readCABundleFile reads the bundle file; a missing file (the optional ConfigMap is not injected:
// not on OpenShift) or an empty path is no bundle.
func readCABundleFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &caBundleError{msg: fmt.Sprintf("reading trusted CA bundle %s: %v", path, err)}
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxCABundleBytes+1))
	if err != nil {
		return nil, &caBundleError{msg: fmt.Sprintf("reading trusted CA bundle %s: %v", path, err)}
	}
	if len(b) > maxCABundleBytes {
		return nil, &caBundleError{msg: fmt.Sprintf("trusted CA bundle %s is larger than %d bytes", path, maxCABundleBytes)}
	}
	return b, nil
}

// checkPEM accepts empty input and input with at least one parsable certificate (a system bundle may
// hold a few certificates Go refuses; those are skipped, as x509.CertPool does).
func checkPEM(b []byte, what string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	rest := b
	blocks := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		blocks++
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err == nil {
			return nil
		}
	}
	if blocks == 0 {
		return &caBundleError{msg: what + " contains no PEM block"}
	}
	return &caBundleError{msg: fmt.Sprintf("%s contains no parsable certificate (%d PEM blocks)", what, blocks)}
}
