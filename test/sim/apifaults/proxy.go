// Package apifaults is a fault-injecting reverse proxy between the operator and the kube-apiserver (the
// crash campaign's API-server faults, test/chaos): it forwards every request and, drawn from a seeded
// random source, loses the response of a write that succeeded, answers bursts of 429 (with Retry-After)
// and 503, cuts watch streams after a while, and slows responses down. Every injected fault is counted by
// kind, so a campaign reports the faults that happened.
//
// The proxy listens with TLS on loopback (its own self-signed certificate, CA in CAData) and passes the
// client's Authorization header through (the operator's ServiceAccount token); upstream it speaks TLS to
// the API server with its CA. It must be TLS: client-go's kubeconfig loader drops a user's token for a
// plain-HTTP server (clientcmd reads auth information only for a secure transport), so a manager pointed
// at a plain-HTTP proxy by a kubeconfig is anonymous and its discovery fails.
package apifaults

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fault kinds, as counted.
const (
	LostResponse = "lost-response" // a create/update/patch/delete succeeded upstream, the client got a 500 instead
	Throttled    = "429"           // 429 Too Many Requests with Retry-After: 1, in bursts
	Unavailable  = "503"           // 503 Service Unavailable, in bursts
	WatchCut     = "watch-cut"     // a watch stream closed after a random 1-10 s
	Slow         = "slow"          // a response held back 200-1500 ms
)

// Kinds lists the fault kinds in the order a report names them.
var Kinds = []string{LostResponse, Throttled, Unavailable, WatchCut, Slow}

// Options set the probability of each fault per request (0: never).
type Options struct {
	Seed uint64
	// LostResponse applies to successful writes (POST, PUT, PATCH, DELETE).
	LostResponse float64
	// Burst starts a burst of 429 or 503 answers (3-8 requests in a row) on a request.
	Burst float64
	// WatchCut applies to watch requests.
	WatchCut float64
	// Slow applies to any request that gets no other fault.
	Slow float64
}

// Proxy is a running fault proxy.
type Proxy struct {
	// URL is where clients connect (https://127.0.0.1:PORT).
	URL *url.URL
	// CAData is the PEM certificate the proxy serves (self-signed: it is its own CA).
	CAData []byte

	o        Options
	upstream *url.URL
	rp       *httputil.ReverseProxy
	srv      *http.Server

	mu      sync.Mutex
	rng     *mrand.Rand
	enabled bool
	burst   int    // answers left in the current burst
	burstAs string // Throttled or Unavailable
	counts  map[string]int
}

// Start proxies to the API server of cfg (its Host and CA); the proxy starts disabled (a pure pass-through).
func Start(cfg *rest.Config, o Options) (*Proxy, error) {
	up, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if len(cfg.CAData) > 0 && !pool.AppendCertsFromPEM(cfg.CAData) {
		return nil, fmt.Errorf("apifaults: the API server's CA is not PEM")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Proxy: nil,
		ResponseHeaderTimeout: 2 * time.Minute, TLSHandshakeTimeout: 10 * time.Second}
	cert, caPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{o: o, upstream: up, rng: mrand.New(mrand.NewPCG(o.Seed, o.Seed^0xfa17)), counts: map[string]int{}, CAData: caPEM}
	p.URL = &url.URL{Scheme: "https", Host: ln.Addr().String()}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(up); r.Out.Host = up.Host },
		Transport:     tr,
		FlushInterval: -1, // stream watches
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "apifaults: upstream: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	// ServeTLS also offers HTTP/2, as the API server does.
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()
	return p, nil
}

// selfSigned makes the proxy's serving certificate for 127.0.0.1, valid for a day.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "apifaults"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM, nil
}

// HTTPClient trusts the proxy's certificate (for tests that speak to it directly).
func (p *Proxy) HTTPClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CAData)
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// Close stops the proxy (open watches are cut).
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	return p.srv.Close()
}

// SetEnabled turns fault injection on or off (off: every request is forwarded untouched).
func (p *Proxy) SetEnabled(on bool) {
	p.mu.Lock()
	p.enabled = on
	if !on {
		p.burst = 0
	}
	p.mu.Unlock()
}

// Counts returns the faults injected so far, by kind.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Total is the number of faults injected so far.
func (p *Proxy) Total() int {
	n := 0
	for _, v := range p.Counts() {
		n += v
	}
	return n
}

// String lists the counts ("429 12, lost-response 3, ...").
func (p *Proxy) String() string {
	c := p.Counts()
	var parts []string
	for k, v := range c {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// decision is what happens to one request.
type decision struct {
	answer   int // 429 or 503: answered by the proxy
	lose     bool
	cutAfter time.Duration
	delay    time.Duration
}

func (p *Proxy) decide(r *http.Request) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d decision
	if !p.enabled {
		return d
	}
	watching := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
	if p.burst == 0 && p.rng.Float64() < p.o.Burst {
		p.burst = 3 + p.rng.IntN(6)
		p.burstAs = Throttled
		if p.rng.IntN(2) == 0 {
			p.burstAs = Unavailable
		}
	}
	switch {
	case p.burst > 0:
		p.burst--
		d.answer = http.StatusTooManyRequests
		if p.burstAs == Unavailable {
			d.answer = http.StatusServiceUnavailable
		}
		p.counts[p.burstAs]++
	case watching && p.rng.Float64() < p.o.WatchCut:
		d.cutAfter = time.Second + time.Duration(p.rng.IntN(9000))*time.Millisecond
	case isWrite(r.Method) && p.rng.Float64() < p.o.LostResponse:
		d.lose = true
	case p.rng.Float64() < p.o.Slow:
		d.delay = 200*time.Millisecond + time.Duration(p.rng.IntN(1300))*time.Millisecond
		p.counts[Slow]++
	}
	return d
}

func (p *Proxy) count(kind string) {
	p.mu.Lock()
	p.counts[kind]++
	p.mu.Unlock()
}

func isWrite(m string) bool {
	return m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch || m == http.MethodDelete
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	d := p.decide(r)
	switch {
	case d.answer != 0:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(d.answer)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"apifaults: injected %d","code":%d}`, d.answer, d.answer)
	case d.lose:
		rec := &discard{header: http.Header{}}
		p.rp.ServeHTTP(rec, r)
		if rec.code >= 200 && rec.code < 300 {
			p.count(LostResponse)
			// The write happened; the client learns nothing of it (a response lost on the way back).
			http.Error(w, "apifaults: response lost", http.StatusInternalServerError)
			return
		}
		copyResponse(w, rec)
	case d.cutAfter > 0:
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		t := time.AfterFunc(d.cutAfter, func() { p.count(WatchCut); cancel() })
		defer t.Stop()
		p.rp.ServeHTTP(w, r.WithContext(ctx))
	default:
		if d.delay > 0 {
			select {
			case <-time.After(d.delay):
			case <-r.Context().Done():
				return
			}
		}
		p.rp.ServeHTTP(w, r)
	}
}

// discard records a response without sending it.
type discard struct {
	header http.Header
	code   int
	body   []byte
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discard) Write(b []byte) (int, error) {
	if d.code == 0 {
		d.code = http.StatusOK
	}
	d.body = append(d.body, b...)
	return len(b), nil
}

func copyResponse(w http.ResponseWriter, d *discard) {
	for k, v := range d.header {
		w.Header()[k] = v
	}
	if d.code == 0 {
		d.code = http.StatusOK
	}
	w.WriteHeader(d.code)
	_, _ = io.Copy(w, strings.NewReader(string(d.body)))
}

// Config is cfg redirected through the proxy (its address and CA), same bearer token.
func (p *Proxy) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = p.URL.String()
	c.TLSClientConfig = rest.TLSClientConfig{CAData: p.CAData}
	return c
}

// WriteKubeconfig writes a kubeconfig reaching the API server through the proxy with token.
func (p *Proxy) WriteKubeconfig(path, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL.String(), CertificateAuthorityData: p.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "operator"}
	kc.CurrentContext = "proxy"
	return clientcmd.WriteToFile(*kc, path)
}
