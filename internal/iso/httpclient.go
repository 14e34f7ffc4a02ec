package iso

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"
)

// HTTPOptions configure the download client. Zero values take the defaults noted per field.
type HTTPOptions struct {
	// CABundle is extra PEM CA certificates trusted besides the system roots (e.g. an in-cluster
	// assisted-image-service signed by the cluster's service CA).
	CABundle []byte
	// DialTimeout bounds TCP connects (default 30s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds TLS handshakes (default 30s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers (default 2m: the image service may
	// build the ISO on first request).
	ResponseHeaderTimeout time.Duration
	// Proxy picks the proxy per request (default http.ProxyFromEnvironment: HTTPS_PROXY/NO_PROXY).
	Proxy func(*http.Request) (*url.URL, error)
}

// NewHTTPClient returns a streaming client for ISO downloads: TLS always verified, bounded connect,
// handshake and header timeouts, proxy from the environment. There is deliberately no overall
// http.Client.Timeout (a 1 GiB download may legitimately take long); Cache enforces an idle-read
// timeout and a maximum duration instead.
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
		o.Proxy = http.ProxyFromEnvironment
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(o.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(o.CABundle) {
			return nil, errors.New("ISO CA bundle contains no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	transport := &http.Transport{
		Proxy:                 o.Proxy,
		DialContext:           (&net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		// The ISO is already compressed; asking for gzip only costs CPU and hides Content-Length.
		DisableCompression: true,
	}
	return &http.Client{Transport: transport}, nil
}
