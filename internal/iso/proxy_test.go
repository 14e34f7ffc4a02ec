package iso

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/elazarl/goproxy"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
)

// connectPolicy is what a test proxy does with a CONNECT.
type connectPolicy int

const (
	connectAllow   connectPolicy = iota
	connectForbid                // answers 403 Forbidden
	connectDropped               // closes the connection without an answer
)

// testProxy is a real forward proxy (elazarl/goproxy) on loopback that records the CONNECTs it saw
// and the local addresses of the connections it opened to servers.
type testProxy struct {
	url    string
	mu     sync.Mutex
	saw    []string
	dialed map[string]bool
}

// carried reports whether a server saw remote as the client address of a connection this proxy opened.
func (p *testProxy) carried(remote string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialed[remote]
}

func startProxy(t *testing.T, policy connectPolicy) *testProxy {
	t.Helper()
	p := &testProxy{dialed: map[string]bool{}}
	proxy := goproxy.NewProxyHttpServer()
	proxy.Logger = discardLog()
	// The proxy resolves the test name to loopback like the client does (see isoHost).
	proxy.ConnectDial = func(network, addr string) (net.Conn, error) {
		c, err := loopbackNames(t.Context(), network, addr)
		if err == nil {
			p.mu.Lock()
			p.dialed[c.LocalAddr().String()] = true
			p.mu.Unlock()
		}
		return c, err
	}
	proxy.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		p.mu.Lock()
		p.saw = append(p.saw, host)
		p.mu.Unlock()
		switch policy {
		case connectForbid:
			ctx.Resp = goproxy.NewResponse(ctx.Req, goproxy.ContentTypeText, http.StatusForbidden, "blocked by policy")
			return goproxy.RejectConnect, host
		case connectDropped:
			return goproxy.RejectConnect, host
		}
		return goproxy.OkConnect, host
	})
	srv := httptest.NewServer(proxy)
	srv.Config.ErrorLog = discardLog()
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *testProxy) connects() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.saw...)
}

// setProxyEnv sets the proxy environment as OLM injects it into the operator's pod.
func setProxyEnv(t *testing.T, httpsProxy, noProxy string) {
	for _, k := range []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY"} {
		t.Setenv(k, "")
	}
	t.Setenv("HTTPS_PROXY", httpsProxy)
	t.Setenv("NO_PROXY", noProxy)
}

// The ISO download goes through the proxy of HTTPS_PROXY, around it for NO_PROXY hosts, and the
// environment is evaluated per request (one Cache, no restart). The client trusts the server's
// private CA through the bundle file.
func TestProxyCarriesISODownload(t *testing.T) {
	pki := newTestPKI(t)
	srv := serveISOOverTLS(t, pki, makeISO(testISOSize, 43))
	bundle := filepath.Join(t.TempDir(), "tls-ca-bundle.pem")
	if err := os.WriteFile(bundle, pki.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	cache, err := NewCache(Options{TrustedCABundleFile: bundle, HTTP: HTTPOptions{DialContext: loopbackNames}})
	if err != nil {
		t.Fatal(err)
	}
	b := memBackend(t)
	proxy := startProxy(t, connectAllow)

	// Each step: the proxy environment, and whether the download must travel through the proxy
	// (the server saw it on a connection the proxy opened) or around it.
	steps := []struct {
		noProxy string
		proxied bool
	}{
		{"", true},
		{"localhost,.svc," + isoHost, false}, // the host itself
		{".example.test", false},             // a domain suffix
		{"", true},                           // NO_PROXY emptied again: through the proxy, no restart
	}
	for i, step := range steps {
		setProxyEnv(t, proxy.url, step.noProxy)
		rr, err := refreshOnce(t, cache, b, srv.url(), nil)
		expectReason(t, rr, err, afv1.ReasonCached)
		if srv.hits.Load() != int64(i+1) {
			t.Fatalf("step %d: server hits %d", i, srv.hits.Load())
		}
		if got := proxy.carried(srv.lastRemote()); got != step.proxied {
			t.Fatalf("step %d (NO_PROXY=%q): through the proxy %v, want %v (CONNECTs seen %v)", i, step.noProxy, got, step.proxied, proxy.connects())
		}
	}
	if got := proxy.connects(); len(got) == 0 || got[0] != isoHost+":"+srv.port {
		t.Fatalf("proxy saw CONNECTs %v", got)
	}
}

// Why the tests use isoHost: net/http's rules (golang.org/x/net/http/httpproxy) never proxy loopback.
func TestProxyFromEnvironmentSkipsLoopback(t *testing.T) {
	setProxyEnv(t, "http://proxy.example.test:3128", "")
	for raw, proxied := range map[string]bool{
		"https://127.0.0.1:8443/x.iso":    false,
		"https://localhost:8443/x.iso":    false,
		"https://" + isoHost + "/x.iso":   true,
		"https://assisted.apps.hub/x.iso": true,
	} {
		u, _ := url.Parse(raw)
		p, err := ProxyFromEnvironment(&http.Request{URL: u})
		if err != nil || (p != nil) != proxied {
			t.Fatalf("%s: proxy %v, %v; want proxied=%v", raw, p, err, proxied)
		}
	}
}

// A proxy that refuses the CONNECT (403, or closing without an answer) gives ProxyRefused; one that
// cannot be reached gives ProxyUnreachable. The token stays out of every message.
func TestProxyFailuresHaveTheirReasons(t *testing.T) {
	pki := newTestPKI(t)
	srv := serveISOOverTLS(t, pki, makeISO(testISOSize, 44))
	cache, err := NewCache(Options{HTTP: HTTPOptions{DialContext: loopbackNames}})
	if err != nil {
		t.Fatal(err)
	}
	b := memBackend(t)

	forbid := startProxy(t, connectForbid)
	setProxyEnv(t, forbid.url, "")
	rr, err := refreshOnce(t, cache, b, srv.url(), pki.caPEM)
	expectReason(t, rr, err, afv1.ReasonProxyRefused, "refused CONNECT", "403", "NO_PROXY")
	if len(forbid.connects()) != 1 || srv.hits.Load() != 0 {
		t.Fatalf("proxy saw %v, server hits %d", forbid.connects(), srv.hits.Load())
	}

	drop := startProxy(t, connectDropped)
	setProxyEnv(t, drop.url, "")
	rr, err = refreshOnce(t, cache, b, srv.url(), pki.caPEM)
	expectReason(t, rr, err, afv1.ReasonProxyRefused, "without answering CONNECT")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	setProxyEnv(t, closed, "")
	rr, err = refreshOnce(t, cache, b, srv.url(), pki.caPEM)
	expectReason(t, rr, err, afv1.ReasonProxyUnreachable, "proxyconnect", "cannot be reached")
	if srv.hits.Load() != 0 {
		t.Fatalf("server hits %d", srv.hits.Load())
	}
}
