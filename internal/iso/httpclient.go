package iso

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/containeroo/agent-forge-operator/internal/tlstrust"
)

// HTTPOptions configure the download client. Zero values take the defaults noted per field.
type HTTPOptions struct {
	// CABundle is extra PEM CA certificates trusted besides the system roots (e.g. an in-cluster
	// assisted-image-service signed by the cluster's service CA).
	CABundle []byte
	// DialTimeout bounds TCP connects, to the image host or to the proxy (default 30s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds TLS handshakes (default 30s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers (default 2m: the image service may
	// build the ISO on first request).
	ResponseHeaderTimeout time.Duration
	// Proxy picks the proxy per request (default ProxyFromEnvironment: HTTP_PROXY, HTTPS_PROXY and
	// NO_PROXY read again for every request).
	Proxy func(*http.Request) (*url.URL, error)
	// DialContext replaces the TCP dialer (default a net.Dialer with DialTimeout). Tests use it to
	// reach loopback servers under a non-loopback name; see ProxyFromEnvironment.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ProxyFromEnvironment returns the proxy for req from HTTP_PROXY, HTTPS_PROXY and NO_PROXY (and their
// lower-case forms) as they are now. Unlike http.ProxyFromEnvironment, which reads the environment
// once per process, it evaluates them on every request, so a changed environment (a test, or a
// process that sets them after start) is honoured. Like net/http it never proxies requests to
// "localhost" or to loopback IP literals.
func ProxyFromEnvironment(req *http.Request) (*url.URL, error) {
	return httpproxy.FromEnvironment().ProxyFunc()(req.URL)
}

// NewHTTPClient returns a streaming client for ISO downloads: TLS always verified, bounded connect,
// handshake and header timeouts, proxy from the environment per request. There is deliberately no
// overall http.Client.Timeout (a 1 GiB download may legitimately take long); Cache enforces a header
// deadline, an idle-read timeout and a maximum duration instead.
func NewHTTPClient(o HTTPOptions) (*http.Client, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 30 * time.Second
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 30 * time.Second
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = 2 * time.Minute
	}
	if o.Proxy == nil {
		o.Proxy = ProxyFromEnvironment
	}
	if o.DialContext == nil {
		o.DialContext = (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}).DialContext
	}
	var roots *x509.CertPool // nil: the system roots
	if len(o.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(o.CABundle) {
			return nil, errors.New("ISO CA bundle contains no PEM certificate")
		}
		roots = pool
	}
	// The image host (and an https:// proxy) is verified by name: the DNS name or the IP literal dialled.
	tlsConfig := tlstrust.ClientConfig(roots)
	transport := &http.Transport{
		Proxy:                  tracedProxy(o.Proxy),
		OnProxyConnectResponse: refuseNon2xxConnect,
		DialContext:            boundedDial(o.DialContext, o.DialTimeout),
		TLSClientConfig:        tlsConfig,
		TLSHandshakeTimeout:    o.TLSHandshakeTimeout,
		ResponseHeaderTimeout:  o.ResponseHeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           4,
		IdleConnTimeout:        90 * time.Second,
		// The ISO is already compressed; asking for gzip only costs CPU and hides Content-Length.
		DisableCompression: true,
	}
	return &http.Client{Transport: transport, CheckRedirect: checkRedirect}, nil
}

// maxRedirects is net/http's own limit, kept.
const maxRedirects = 10

// checkRedirect refuses a redirect to anything but https unless the request's context allows plain
// HTTP (the pool's spec.iso.allowPlainHTTP): an https download is never downgraded silently.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if req.URL.Scheme != "https" && !plainHTTPAllowed(req.Context()) {
		return &PlainHTTPError{Scheme: req.URL.Scheme, Redirect: true}
	}
	return nil
}

type plainHTTPKey struct{}

// WithPlainHTTP returns ctx under which requests of the download client may use (and redirect to)
// plain http:// URLs.
func WithPlainHTTP(ctx context.Context, allowed bool) context.Context {
	return context.WithValue(ctx, plainHTTPKey{}, allowed)
}

func plainHTTPAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(plainHTTPKey{}).(bool)
	return ok
}

// PlainHTTPError refuses an ISO URL, or a redirect, that is not https while the pool does not allow
// plain HTTP.
type PlainHTTPError struct {
	Scheme   string
	Redirect bool
}

func (e *PlainHTTPError) Error() string {
	what := "the discovery ISO URL"
	if e.Redirect {
		what = "the image host redirected the download to a URL that"
	}
	return fmt.Sprintf("%s uses %s, not https: refused, nothing is downloaded over an unauthenticated connection (set spec.iso.allowPlainHTTP: true to allow it)", what, e.Scheme+"://")
}

// boundedDial gives every dial a deadline, also when a caller-supplied dialer has none.
func boundedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return dial(ctx, network, addr)
	}
}
