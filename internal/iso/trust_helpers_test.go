package iso

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// isoHost is the name the tests give their loopback ISO server. Go's proxy selection never proxies
// "localhost" or loopback IP literals, so a test that must show traffic going through a proxy cannot
// address the server as 127.0.0.1. The name (.test is reserved, RFC 2606) is resolved by
// loopbackNames, the dialer of both the client (HTTPOptions.DialContext) and the proxy: no DNS, and
// the bytes really travel client -> proxy (CONNECT) -> server.
const isoHost = "iso.example.test"

// testPKI is a private CA and a server certificate it signed for isoHost and 127.0.0.1.
type testPKI struct {
	caPEM      []byte
	serverCert tls.Certificate
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent-forge test private CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: isoHost},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{isoHost}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return testPKI{
		caPEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		serverCert: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey},
	}
}

// tlsISOServer serves an ISO over HTTPS with pki's certificate and counts the requests it answered.
type tlsISOServer struct {
	port string
	hits atomic.Int64

	mu      sync.Mutex
	remotes []string // client address of every request, in order
}

// lastRemote is the client address of the latest request.
func (s *tlsISOServer) lastRemote() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.remotes) == 0 {
		return ""
	}
	return s.remotes[len(s.remotes)-1]
}

func serveISOOverTLS(t *testing.T, pki testPKI, body []byte) *tlsISOServer {
	t.Helper()
	s := &tlsISOServer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.remotes = append(s.remotes, r.RemoteAddr)
		s.mu.Unlock()
		s.hits.Add(1)
		_, _ = w.Write(body)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.serverCert}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = discardLog()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, s.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return s
}

// url is the server's ISO URL under isoHost, with an assisted-image-service style api_key token.
func (s *tlsISOServer) url() string {
	return "https://" + isoHost + ":" + s.port + "/images/infraenv-1/minimal.iso?api_key=" + testToken + "&arch=x86_64"
}

// loopbackNames dials isoHost on 127.0.0.1 and everything else as asked.
func loopbackNames(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && strings.EqualFold(host, isoHost) {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// expectNoToken fails when the ISO URL's token shows in the refresh's error, condition, status or events.
func expectNoToken(t *testing.T, rr RefreshResult, err error) {
	t.Helper()
	texts := []string{rr.Condition.Message, rr.Status.LastError, rr.Status.URL}
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, e := range rr.Events {
		texts = append(texts, e.Message)
	}
	for _, s := range texts {
		if strings.Contains(s, testToken) || strings.Contains(s, "api_key") {
			t.Fatalf("token leaked: %q", s)
		}
	}
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
