package vsphere_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/containeroo/agent-forge-operator/test/vcsim"
)

// startSim runs the simulator in its own process (test/vcsim), stopped at test end.
func startSim(t *testing.T) *vcsim.Env {
	t.Helper()
	env, err := vcsim.StartProcess(testContext(t), vcsim.Options{})
	if err != nil {
		t.Fatalf("start simulator: %v", err)
	}
	t.Cleanup(env.Close)
	return env
}

// silentTCP accepts TCP connections and never reads or writes: a TLS handshake to it never completes.
func silentTCP(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int32)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), accepted
}

// mutedTLS completes TLS handshakes and reads requests, but never answers one (until test end).
func mutedTLS(t *testing.T) (srv *httptest.Server, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	release := make(chan struct{})
	srv = httptest.NewTLSServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv, requests
}

// relay forwards TCP connections to target. Frozen, it keeps accepting and reading but forwards nothing
// (a vCenter that went dark mid-session); thawed, it forwards what it held.
type relay struct {
	ln     net.Listener
	target string
	done   chan struct{}

	mu    sync.Mutex
	open  chan struct{} // closed while not frozen
	conns []net.Conn
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target, done: make(chan struct{}), open: make(chan struct{})}
	close(r.open)
	go r.serve()
	t.Cleanup(r.close)
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.open:
		r.open = make(chan struct{})
	default:
	}
}

func (r *relay) thaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.open:
	default:
		close(r.open)
	}
}

func (r *relay) gate() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open
}

func (r *relay) serve() {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", r.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, in, out)
		r.mu.Unlock()
		go r.pipe(in, out)
		go r.pipe(out, in)
	}
}

// pipe copies src to dst, holding every chunk while the relay is frozen.
func (r *relay) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-r.gate():
			case <-r.done:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
			}
			return
		}
	}
}

func (r *relay) close() {
	close(r.done)
	_ = r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		_ = c.Close()
	}
}

// mapDialer dials name:port as 127.0.0.1:port for the names in hosts and records every address it was
// asked for.
type mapDialer struct {
	hosts map[string]bool
	mu    sync.Mutex
	asked []string
}

func (d *mapDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.asked = append(d.asked, addr)
	d.mu.Unlock()
	if host, port, err := net.SplitHostPort(addr); err == nil && d.hosts[host] {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

func (d *mapDialer) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.asked...)
}
