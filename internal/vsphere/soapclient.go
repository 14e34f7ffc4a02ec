package vsphere

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/soap"
	"golang.org/x/net/http/httpproxy"

	"github.com/containeroo/agent-forge-operator/internal/tlstrust"
)

// dialFunc dials a TCP connection (net.Dialer.DialContext's shape).
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// newSOAPClient builds the HTTP/SOAP client of one session: bounded dial, TLS handshake and response
// header waits, the proxy environment evaluated per request, TLS verified by this package (system roots
// plus the extra CA file plus the Secret's CA bundle, or a pinned SHA-256 thumbprint; insecure only when
// asked) on direct and proxied connections alike, and every request behind the vCenter's guard
// (breaker, default deadline, typed errors).
func (s *SessionCache) newSOAPClient(creds Credentials, u *url.URL, b *breaker) (*soap.Client, error) {
	sc := soap.NewClient(u, creds.Insecure)
	t := sc.DefaultTransport()
	dial := s.opts.dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: s.opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = dial
	t.TLSHandshakeTimeout = s.opts.TLSHandshakeTimeout
	t.ResponseHeaderTimeout = s.opts.ResponseHeaderTimeout
	t.Proxy = proxyFromEnvironment
	t.OnProxyConnectResponse = proxyConnectResponse

	// govmomi's own TLS dialer (for its thumbprint fallback) has neither a context nor a timeout: a
	// server that accepts TCP and never answers the handshake would hold the caller forever. It is
	// replaced below (or dropped when insecure), and tlstrust does the thumbprint check in the same
	// handshake.
	t.DialTLSContext = nil
	if creds.Insecure {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // the Secret says insecure: "true"; VCenterTLSVerified warns
	} else {
		var pin string
		if creds.Thumbprint != "" {
			pin = normalizeThumbprint(creds.Thumbprint)
			if len(pin) != 32*3-1 {
				return nil, NewError(ClassInvalid, "Login", "thumbprint must be a SHA-256 fingerprint (64 hex digits)")
			}
		}
		// A CA bundle or extra CA file without a certificate fails the login, not every handshake.
		if _, err := s.cas.roots(creds.CABundle); err != nil {
			return nil, &Error{Class: ClassInvalid, Op: "Login", Err: err}
		}
		bundle := creds.CABundle
		v := tlstrust.Verifier{Roots: func() (*x509.CertPool, error) { return s.cas.roots(bundle) }, Pin: pin}
		// Every certificate is checked against the host dialled, never the handshake's SNI (empty for
		// an IP literal): a TLS connection on a fresh TCP connection (vCenter itself, or an https://
		// proxy) through DialTLS, vCenter inside a proxy's CONNECT tunnel through TLSClientConfig.
		t.DialTLSContext = v.DialTLS(dial, s.opts.TLSHandshakeTimeout)
		t.TLSClientConfig = v.Config(u.Hostname())
	}
	sc.Transport = &guard{next: t, breaker: b, callTimeout: s.opts.CallTimeout}
	return sc, nil
}

// guardServiceClient puts a service client (SPBM, vAPI REST) that shares the session's transport
// behind the same guard: govmomi builds those clients on the bare *http.Transport.
func (c *client) guardServiceClient(sc *soap.Client) {
	if g, ok := c.soap.Transport.(*guard); ok {
		sc.Transport = g
	}
}

// normalizeThumbprint accepts "AB:CD:..", "abcd..", with or without colons, and returns govmomi's format.
func normalizeThumbprint(tp string) string {
	tp = strings.ToUpper(strings.NewReplacer(":", "", " ", "").Replace(strings.TrimSpace(tp)))
	if tp == "" {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(tp); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		end := min(i+2, len(tp))
		b.WriteString(tp[i:end])
	}
	return b.String()
}

// proxyFromEnvironment reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and their lower-case forms) on every
// request, unlike http.ProxyFromEnvironment, which reads them once per process: a changed environment
// (or a test) takes effect on the next connection. Loopback hosts are never proxied.
func proxyFromEnvironment(req *http.Request) (*url.URL, error) {
	return httpproxy.FromEnvironment().ProxyFunc()(req.URL)
}

// proxyConnectResponse turns a proxy's refusal of the CONNECT tunnel into a *ProxyError.
func proxyConnectResponse(_ context.Context, proxyURL *url.URL, connectReq *http.Request, res *http.Response) error {
	if res.StatusCode == http.StatusOK {
		return nil
	}
	return &ProxyError{Proxy: proxyURL.Host, Target: connectReq.Host, Status: res.Status, StatusCode: res.StatusCode}
}

// caSource holds the extra CA file (SessionOptions.ExtraCAFile) and re-reads it when its size or
// modification time changes, so a rotated CA (a re-mounted ConfigMap) is trusted without a restart.
type caSource struct {
	file string

	mu      sync.Mutex
	stamp   string // size and mtime of the file last read; "" when absent
	base    *x509.CertPool
	baseErr error
	loaded  bool
	bundles map[string]*x509.CertPool // base + a Secret's CA bundle, by bundle
}

// roots returns the system roots plus the extra CA file plus bundle. An absent extra file means the
// system roots only; a file without a PEM certificate is an error.
func (c *caSource) roots(bundle []byte) (*x509.CertPool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refreshLocked(); err != nil {
		return nil, err
	}
	if len(bundle) == 0 {
		return c.base, nil
	}
	key := string(bundle)
	if p, ok := c.bundles[key]; ok {
		return p, nil
	}
	p := c.base.Clone()
	if !p.AppendCertsFromPEM(bundle) {
		return nil, errors.New("caBundle holds no PEM certificate")
	}
	if len(c.bundles) > 64 {
		c.bundles = map[string]*x509.CertPool{}
	}
	c.bundles[key] = p
	return p, nil
}

func (c *caSource) refreshLocked() error {
	stamp := ""
	var data []byte
	if c.file != "" {
		fi, err := os.Stat(c.file)
		switch {
		case err == nil:
			stamp = fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
		case !errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("extra CA file: %w", err)
		}
	}
	if c.loaded && stamp == c.stamp {
		return c.baseErr
	}
	if stamp != "" {
		var err error
		if data, err = os.ReadFile(c.file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("extra CA file: %w", err)
		}
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	c.baseErr = nil
	if len(bytes.TrimSpace(data)) > 0 && !pool.AppendCertsFromPEM(data) {
		c.baseErr = errors.New("extra CA file " + c.file + " holds no PEM certificate")
	}
	c.base, c.stamp, c.loaded = pool, stamp, true
	c.bundles = map[string]*x509.CertPool{}
	return c.baseErr
}
