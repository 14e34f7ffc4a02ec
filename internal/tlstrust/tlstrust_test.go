package tlstrust_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vmware/govmomi/vim25/soap"

	"github.com/containeroo/agent-forge-operator/internal/tlstrust"
	"github.com/containeroo/agent-forge-operator/internal/tlstrust/tlstrusttest"
)

// TestVerifyChecksTheDialledHost: a certificate is accepted only for a host it names; an IP literal
// is matched against IP SANs (IPv4 and IPv6, bracketed or with a zone), never against a DNS SAN; an
// empty host accepts nothing.
func TestVerifyChecksTheDialledHost(t *testing.T) {
	ca := tlstrusttest.NewCA(t)
	other := tlstrusttest.NewCA(t)
	v6 := net.ParseIP("fd00::5")
	dnsOnly := ca.Server(t, []string{"vcenter.example.com"})
	withIPs := ca.Server(t, []string{"vcenter.example.com"}, net.IPv4(127, 0, 0, 1), v6)
	foreign := other.Server(t, []string{"vcenter.example.com"}, net.IPv4(127, 0, 0, 1))

	cases := []struct {
		name    string
		cert    tls.Certificate
		host    string
		wantErr any // nil, or a pointer to the x509 error type expected
	}{
		{"DNS name in SANs", dnsOnly, "vcenter.example.com", nil},
		{"DNS name with root dot", dnsOnly, "vcenter.example.com.", nil},
		{"other DNS name", dnsOnly, "evil.example.com", &x509.HostnameError{}},
		{"IPv4 literal, cert names only a DNS name", dnsOnly, "127.0.0.1", &x509.HostnameError{}},
		{"IPv4 literal in IP SANs", withIPs, "127.0.0.1", nil},
		{"other IPv4 literal", withIPs, "10.0.0.5", &x509.HostnameError{}},
		{"IPv6 literal in IP SANs", withIPs, "fd00::5", nil},
		{"bracketed IPv6 literal", withIPs, "[fd00::5]", nil},
		{"IPv6 literal with zone", withIPs, "fd00::5%eth0", nil},
		{"IPv6 literal, cert names only a DNS name", dnsOnly, "[fd00::5]", &x509.HostnameError{}},
		{"untrusted CA, right name", foreign, "127.0.0.1", &x509.UnknownAuthorityError{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tlstrust.Verify([]*x509.Certificate{tc.cert.Leaf}, tc.host, ca.Pool())
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case *x509.HostnameError:
				if !errors.As(err, want) {
					t.Fatalf("err %v, want a HostnameError", err)
				}
			case *x509.UnknownAuthorityError:
				if !errors.As(err, want) {
					t.Fatalf("err %v, want an UnknownAuthorityError", err)
				}
			}
		})
	}
	if err := tlstrust.Verify([]*x509.Certificate{withIPs.Leaf}, "", ca.Pool()); !errors.Is(err, tlstrust.ErrNoHost) {
		t.Fatalf("empty host: %v, want ErrNoHost", err)
	}
}

// TestVerifierPin: a pinned thumbprint accepts exactly that certificate when chain or name fail, and
// the refusal of another one keeps the x509 error.
func TestVerifierPin(t *testing.T) {
	ca := tlstrusttest.NewCA(t)
	cert := ca.Server(t, []string{"vcenter.example.com"})
	if got, want := tlstrust.Thumbprint(cert.Leaf), soap.ThumbprintSHA256(cert.Leaf); got != want {
		t.Fatalf("Thumbprint %s, govmomi says %s", got, want)
	}
	chain := []*x509.Certificate{cert.Leaf}
	pinned := tlstrust.Verifier{Roots: func() (*x509.CertPool, error) { return x509.NewCertPool(), nil }, Pin: tlstrust.Thumbprint(cert.Leaf)}
	if err := pinned.Verify(chain, "127.0.0.1"); err != nil {
		t.Fatalf("pinned certificate refused: %v", err)
	}
	wrong := pinned
	wrong.Pin = tlstrust.Thumbprint(ca.Server(t, []string{"x"}).Leaf)
	err := wrong.Verify(chain, "127.0.0.1")
	var he x509.HostnameError
	if !errors.Is(err, tlstrust.ErrPinMismatch) || !errors.As(err, &he) {
		t.Fatalf("wrong pin: %v, want ErrPinMismatch wrapping the x509 error", err)
	}
}

// TestDialTLSVerifiesTheAddressDialled: a real loopback handshake reached by IP literal is refused when
// the certificate names only a DNS name (Go sends no SNI for it, so ConnectionState.ServerName is
// empty: the check must not depend on it) and accepted when it carries the IP SAN.
func TestDialTLSVerifiesTheAddressDialled(t *testing.T) {
	ca := tlstrusttest.NewCA(t)
	v := tlstrust.Verifier{Roots: func() (*x509.CertPool, error) { return ca.Pool(), nil }}
	for _, tc := range []struct {
		name string
		cert tls.Certificate
		ok   bool
	}{
		{"DNS SAN only", ca.Server(t, []string{"vcenter.example.com"}), false},
		{"IP SAN", ca.Server(t, []string{"vcenter.example.com"}, net.IPv4(127, 0, 0, 1)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{tc.cert}}
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.StartTLS()
			defer srv.Close()
			tr := &http.Transport{DialTLSContext: v.DialTLS((&net.Dialer{}).DialContext, 0), TLSClientConfig: v.Config("127.0.0.1")}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL) // https://127.0.0.1:port
			if resp != nil {
				_ = resp.Body.Close()
			}
			var he x509.HostnameError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && !errors.As(err, &he):
				t.Fatalf("err %v, want a HostnameError", err)
			}
		})
	}
}
