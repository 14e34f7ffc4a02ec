package vsphere_test

import (
	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"

	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/elazarl/goproxy"
	"github.com/google/uuid"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// vcName is the vCenter's name in the proxy tests: not loopback, so the proxy environment applies to it
// (loopback hosts are never proxied); the proxy and the test dialer map it to 127.0.0.1.
const vcName = "vcenter.test"

// forwardProxy is a real HTTP forward proxy (goproxy) on loopback that tunnels CONNECT to vcName.
type forwardProxy struct {
	srv    *httptest.Server
	refuse atomic.Bool // answer CONNECT with 403, as a proxy's access policy does

	mu       sync.Mutex
	connects []string
}

func startProxy(t *testing.T) *forwardProxy {
	t.Helper()
	p := &forwardProxy{}
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	gp.ConnectDial = nil // its default follows HTTPS_PROXY, which points at itself here
	gp.ConnectDialWithReq = func(_ *http.Request, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && host == vcName {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return net.Dial(network, addr)
	}
	gp.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		p.mu.Lock()
		p.connects = append(p.connects, host)
		p.mu.Unlock()
		if p.refuse.Load() {
			ctx.Resp = goproxy.NewResponse(ctx.Req, "text/plain", http.StatusForbidden, "CONNECT denied by policy")
			return goproxy.RejectConnect, host
		}
		return goproxy.OkConnect, host
	})
	p.srv = httptest.NewServer(gp)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *forwardProxy) host() string { return strings.TrimPrefix(p.srv.URL, "http://") }

func (p *forwardProxy) tunnels() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...)
}

// setProxyEnv sets the proxy variables in both spellings for the test.
func setProxyEnv(t *testing.T, httpsProxy, noProxy string) {
	t.Helper()
	for _, kv := range [][2]string{{"HTTPS_PROXY", httpsProxy}, {"NO_PROXY", noProxy}, {"HTTP_PROXY", ""}} {
		t.Setenv(kv[0], kv[1])
		t.Setenv(strings.ToLower(kv[0]), kv[1])
	}
}

// TestSOAPTrafficHonoursTheProxyEnvironment: with HTTPS_PROXY set, the session's SOAP traffic goes
// through the proxy's CONNECT tunnel (the pinned thumbprint is verified through it); a NO_PROXY host is
// dialled directly; a proxy that refuses the tunnel, or is down, yields ErrProxy naming the proxy's host
// and never its credentials.
func TestSOAPTrafficHonoursTheProxyEnvironment(t *testing.T) {
	env := startSim(t)
	_, port, err := net.SplitHostPort(env.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	vcAddr := net.JoinHostPort(vcName, port)
	creds := env.Credentials
	creds.Server = "https://" + vcAddr + "/sdk"
	creds.CABundle = nil // the simulator's certificate does not name vcName: pinned instead
	creds.Thumbprint = env.Thumbprint

	login := func(t *testing.T) (*mapDialer, error) {
		t.Helper()
		dialer := &mapDialer{hosts: map[string]bool{vcName: true}}
		opts := vsphere.SessionOptions{}
		vsphere.SetDialer(&opts, dialer.dial)
		sessions := vsphere.NewSessions(opts)
		t.Cleanup(func() { sessions.Close(context.Background()) })
		ctx := testContext(t)
		c, err := sessions.Get(ctx, creds)
		if err != nil {
			return dialer, err
		}
		if _, err := c.FindVM(ctx, vcsim.Datacenter, uuid.NewString(), ""); !vsphere.IsNotFound(err) {
			t.Fatalf("FindVM: %v", err)
		}
		return dialer, nil
	}

	t.Run("HTTPS_PROXY tunnels vCenter traffic", func(t *testing.T) {
		proxy := startProxy(t)
		setProxyEnv(t, proxy.srv.URL, "")
		dialer, err := login(t)
		if err != nil {
			t.Fatalf("login through the proxy: %v", err)
		}
		if got := proxy.tunnels(); len(got) == 0 || slices.ContainsFunc(got, func(h string) bool { return h != vcAddr }) {
			t.Fatalf("proxy tunnels %v, want only %s", got, vcAddr)
		}
		if got := dialer.dialed(); slices.Contains(got, vcAddr) || !slices.Contains(got, proxy.host()) {
			t.Fatalf("dialled %v: want the proxy %s and never %s directly", got, proxy.host(), vcAddr)
		}
	})

	t.Run("a NO_PROXY host is dialled directly", func(t *testing.T) {
		proxy := startProxy(t)
		setProxyEnv(t, proxy.srv.URL, "localhost,"+vcName)
		dialer, err := login(t)
		if err != nil {
			t.Fatalf("direct login: %v", err)
		}
		if got := proxy.tunnels(); len(got) != 0 {
			t.Fatalf("proxy tunnels %v for a NO_PROXY host", got)
		}
		if got := dialer.dialed(); !slices.Contains(got, vcAddr) || slices.Contains(got, proxy.host()) {
			t.Fatalf("dialled %v: want %s directly and never the proxy", got, vcAddr)
		}
	})

	t.Run("a proxy refusing CONNECT", func(t *testing.T) {
		proxy := startProxy(t)
		proxy.refuse.Store(true)
		setProxyEnv(t, "http://proxyuser:"+hungPassword+"@"+proxy.host(), "")
		_, err := login(t)
		t.Log(err)
		wantIs(t, err, vsphere.ErrProxy)
		var pe *vsphere.ProxyError
		if !errors.As(err, &pe) || pe.StatusCode != http.StatusForbidden || pe.Proxy != proxy.host() || pe.Target != vcAddr {
			t.Fatalf("want a ProxyError 403 from %s for %s, got %#v", proxy.host(), vcAddr, pe)
		}
		if r := vsphere.Reason(err); r != afv1.ReasonVCenterProxyError {
			t.Fatalf("reason %q", r)
		}
		for _, want := range []string{proxy.host(), "403", "refused"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "proxyuser") {
			t.Errorf("error names the proxy's user: %v", err)
		}
	})

	t.Run("a proxy that is down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := ln.Addr().String()
		_ = ln.Close()
		setProxyEnv(t, "http://"+down, "")
		_, err = login(t)
		t.Log(err)
		wantIs(t, err, vsphere.ErrProxy)
		if !strings.Contains(err.Error(), down) || vsphere.Reason(err) != afv1.ReasonVCenterProxyError {
			t.Fatalf("%v (reason %q): want ErrProxy naming %s", err, vsphere.Reason(err), down)
		}
	})
}
