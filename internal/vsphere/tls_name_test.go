package vsphere_test

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/containeroo/agent-forge-operator/internal/tlstrust"
	"github.com/containeroo/agent-forge-operator/internal/tlstrust/tlstrusttest"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// TestVCenterByIPLiteralIsVerifiedAgainstItsIP: a vCenter addressed by an IP literal (IPv4, and IPv6
// where the host has it) that presents a certificate of a trusted CA for another name (DNS SAN
// vcenter.example.com only) is refused with a certificate error (ClassInvalid, reason
// VCenterCertificateRejected) and never sent the password; the same CA's certificate with that IP in
// its SANs logs in. A pinned thumbprint and insecure keep working as before.
func TestVCenterByIPLiteralIsVerifiedAgainstItsIP(t *testing.T) {
	env, err := vcsim.Start(vcsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	ca := tlstrusttest.NewCA(t)
	for _, fam := range []struct{ listen, ip string }{{"127.0.0.1:0", "127.0.0.1"}, {"[::1]:0", "::1"}} {
		ip := net.ParseIP(fam.ip)
		wrongName := ca.Server(t, []string{"vcenter.example.com"})
		rightIP := ca.Server(t, []string{"vcenter.example.com"}, ip)
		login := func(t *testing.T, cert tls.Certificate, edit func(*vsphere.Credentials)) error {
			t.Helper()
			front := tlstrusttest.Front(t, fam.listen, cert, env.URL, env.Credentials.CABundle)
			creds := env.Credentials
			creds.Server = front.URL + "/sdk" // https://127.0.0.1:port or https://[::1]:port
			creds.CABundle = ca.PEM
			if edit != nil {
				edit(&creds)
			}
			sessions := vsphere.NewSessions(vsphere.SessionOptions{})
			t.Cleanup(func() { sessions.Close(context.Background()) })
			ctx := testContext(t)
			c, err := sessions.Get(ctx, creds)
			if err != nil {
				return err
			}
			if _, err := c.FindVM(ctx, vcsim.Datacenter, uuid.NewString(), ""); !vsphere.IsNotFound(err) {
				t.Fatalf("FindVM after login: %v", err)
			}
			return nil
		}

		t.Run(fam.ip+": certificate for another name is refused", func(t *testing.T) {
			err := login(t, wrongName, nil)
			wantClass(t, err, vsphere.ClassInvalid)
			if r := vsphere.Reason(err); r != afv1.ReasonVCenterCertificateRejected {
				t.Fatalf("reason %q, want %s", r, afv1.ReasonVCenterCertificateRejected)
			}
			var he x509.HostnameError
			if !errors.As(err, &he) || !strings.Contains(err.Error(), fam.ip) {
				t.Fatalf("err %v: want an x509.HostnameError naming %s", err, fam.ip)
			}
		})
		t.Run(fam.ip+": certificate with the IP in its SANs is accepted", func(t *testing.T) {
			if err := login(t, rightIP, nil); err != nil {
				t.Fatalf("login: %v", err)
			}
		})
		t.Run(fam.ip+": a pinned thumbprint still accepts the other name's certificate", func(t *testing.T) {
			err := login(t, wrongName, func(c *vsphere.Credentials) {
				c.CABundle = nil
				c.Thumbprint = tlstrust.Thumbprint(wrongName.Leaf)
			})
			if err != nil {
				t.Fatalf("pinned login: %v", err)
			}
		})
		t.Run(fam.ip+": a wrong pin does not rescue it", func(t *testing.T) {
			err := login(t, wrongName, func(c *vsphere.Credentials) { c.Thumbprint = tlstrust.Thumbprint(rightIP.Leaf) })
			if !errors.Is(err, tlstrust.ErrPinMismatch) || vsphere.Reason(err) != afv1.ReasonVCenterCertificateRejected {
				t.Fatalf("err %v (reason %q): want a pin mismatch", err, vsphere.Reason(err))
			}
		})
		t.Run(fam.ip+": insecure skips verification as before", func(t *testing.T) {
			if err := login(t, wrongName, func(c *vsphere.Credentials) { c.CABundle, c.Insecure = nil, true }); err != nil {
				t.Fatalf("insecure login: %v", err)
			}
		})
	}
}
