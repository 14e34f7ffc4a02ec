// Package tlstrust is the one place that decides whether a TLS server is the one a client meant to
// reach: the certificate must chain to a trusted root AND name the host that was dialled, a DNS name
// against the certificate's DNS SANs, an IP literal (IPv4 or IPv6) against its IP SANs. Every TLS client
// of the operator uses it: the vCenter SOAP/REST session (Verifier, with its optional thumbprint pin),
// ISO downloads (ClientConfig) and the HTTPS proxies they go through.
//
// Why a package of its own: crypto/tls cannot do the vCenter's check (a pinned thumbprint must be
// accepted when the chain is not trusted), so that client turns crypto/tls's check off and verifies in
// VerifyConnection. There the handshake's ConnectionState.ServerName is the SNI, which Go leaves empty
// for IP literals: a check against it verifies no name at all for `server: https://10.0.0.5`. Verify
// takes the dialled host from the caller instead, and refuses an empty one.
package tlstrust

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// ErrNoHost is returned when there is no host to check a certificate against: a certificate is never
// accepted for "any name".
var ErrNoHost = errors.New("no server name to verify the certificate against")

// ErrPinMismatch is returned (wrapping the chain's error) when a pinned thumbprint does not match.
var ErrPinMismatch = errors.New("certificate thumbprint does not match the pinned thumbprint")

// NormalizeHost returns host as x509 matches it: IPv6 brackets and zone removed, the DNS root dot
// dropped. A host:port is not accepted here; callers split the port first.
func NormalizeHost(host string) string {
	host = strings.TrimSpace(host)
	if len(host) >= 2 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	if i := strings.LastIndexByte(host, '%'); i > 0 && net.ParseIP(host[:i]) != nil {
		host = host[:i] // a zone names the local interface, not the server
	}
	return strings.TrimSuffix(host, ".")
}

// Verify checks certs (the leaf first, as the server sent them) against roots (nil: the system roots)
// and the dialled host. The error is crypto/x509's (UnknownAuthorityError, HostnameError,
// CertificateInvalidError), so callers can classify it.
func Verify(certs []*x509.Certificate, host string, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("the server sent no certificate")
	}
	h := NormalizeHost(host)
	if h == "" {
		return ErrNoHost
	}
	opts := x509.VerifyOptions{DNSName: h, Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}

// Thumbprint is a certificate's SHA-256 fingerprint in vSphere's format ("AB:CD:...", upper case).
func Thumbprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// Verifier verifies the servers of one client that talks to known hosts (a vCenter, and the HTTPS
// proxy in front of it).
type Verifier struct {
	// Roots returns the trusted roots, evaluated per handshake (a rotated CA file is picked up).
	Roots func() (*x509.CertPool, error)
	// Pin is a SHA-256 thumbprint in Thumbprint's format: when the chain or name check fails, a leaf
	// with exactly this thumbprint is still accepted (the user vouched for that certificate).
	Pin string
}

// Verify is Verify with the Verifier's roots and pin.
func (v Verifier) Verify(certs []*x509.Certificate, host string) error {
	var roots *x509.CertPool
	if v.Roots != nil {
		var err error
		if roots, err = v.Roots(); err != nil {
			return err
		}
	}
	err := Verify(certs, host, roots)
	if err == nil || v.Pin == "" || len(certs) == 0 {
		return err
	}
	if Thumbprint(certs[0]) == v.Pin {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPinMismatch, err)
}

// Config is the tls.Config of a connection to host: crypto/tls's own check is replaced by VerifyConnection
// (so a pin works), which checks the certificate against host whatever the handshake's SNI was.
// ServerName is host, so a DNS name is sent as SNI (crypto/tls sends none for IP literals).
func (v Verifier) Config(host string) *tls.Config {
	host = NormalizeHost(host)
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         host,
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies chain, name (and pin) itself
		VerifyConnection: func(cs tls.ConnectionState) error {
			return v.Verify(cs.PeerCertificates, host)
		},
	}
}

// DialTLS returns an http.Transport DialTLSContext: it dials addr with dial and completes the handshake
// within timeout, verifying against addr's host. net/http uses it for every TLS connection it opens on
// a fresh TCP connection (the server itself, or an https:// proxy), so each is checked against the host
// it reached; a server behind a CONNECT tunnel is verified by the transport's TLSClientConfig
// (Config of that server's host).
func (v Verifier) DialTLS(dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			hctx, cancel = context.WithTimeout(ctx, timeout)
		}
		defer cancel()
		tc := tls.Client(conn, v.Config(host))
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return tc, nil
	}
}

// ClientConfig is the tls.Config of a client that talks to many hosts (ISO downloads follow redirects
// to any image host): crypto/tls's own check stays on and verifies against roots (nil: the system
// roots) and Config.ServerName, which net/http sets on every connection to the host it dialled, the
// IP literal included; that is the same check as Verify.
func ClientConfig(roots *x509.CertPool) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}
}
