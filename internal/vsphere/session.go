package vsphere

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
	"k8s.io/utils/clock"
)

// SessionOptions tune a SessionCache. The zero value is usable: every zero duration takes its default.
type SessionOptions struct {
	Logger logr.Logger
	// KeepAlive is the idle interval between keep-alive calls of a session (default 5 minutes).
	KeepAlive time.Duration
	// WrapRoundTripper, when set, wraps every session's SOAP transport (below re-login and keep-alive),
	// e.g. a request counter in benchmarks and tests.
	WrapRoundTripper func(soap.RoundTripper) soap.RoundTripper
	// TaskPollInterval is the first delay before a task's state is read (default 5 ms, doubling up to 1 s).
	TaskPollInterval time.Duration

	// ExtraCAFile is a PEM file of CA certificates trusted for every vCenter on top of the system roots
	// (and of a Secret's caBundle), e.g. a corporate CA mounted from a ConfigMap. Empty or absent: the
	// system roots only. Re-read when its size or modification time changes.
	ExtraCAFile string

	// DialTimeout bounds a TCP connect (default 10 s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds a TLS handshake (default 10 s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers once a request is sent (default 60 s).
	ResponseHeaderTimeout time.Duration
	// LoginTimeout bounds a login (service content, login; default 30 s). A login is shared by every
	// caller that waits for it and runs on none of their contexts.
	LoginTimeout time.Duration
	// CallTimeout is the deadline of an HTTP request whose context has none (default 2 minutes).
	CallTimeout time.Duration
	// TaskTimeout is the deadline of a task wait whose context has none (default 10 minutes).
	TaskTimeout time.Duration
	// UploadTimeout is the deadline of a datastore upload whose context has none (default 1 hour).
	UploadTimeout time.Duration

	// Breaker tunes the per-vCenter circuit breakers.
	Breaker BreakerOptions
	// Clock drives the breakers' cool-down (default: the real clock); tests inject a fake one.
	Clock clock.PassiveClock

	// dial replaces the TCP dialer (tests map names to loopback; see export_test.go).
	dial dialFunc
}

func (o *SessionOptions) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.KeepAlive, 5*time.Minute)
	def(&o.TaskPollInterval, 5*time.Millisecond)
	def(&o.DialTimeout, 10*time.Second)
	def(&o.TLSHandshakeTimeout, 10*time.Second)
	def(&o.ResponseHeaderTimeout, 60*time.Second)
	def(&o.LoginTimeout, 30*time.Second)
	def(&o.CallTimeout, 2*time.Minute)
	def(&o.TaskTimeout, 10*time.Minute)
	def(&o.UploadTimeout, time.Hour)
	def(&o.Breaker.CoolDown, 30*time.Second)
	if o.Breaker.Threshold <= 0 {
		o.Breaker.Threshold = 5
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// SessionCache implements Sessions: one logged-in client per (server, user, credential hash), shared by
// every reconcile and pool. A session that expires is renewed transparently on the next call that vCenter
// rejects with NotAuthenticated; no liveness probe is sent before reuse (it would cost a round trip per use).
// Each vCenter endpoint has its own circuit breaker, shared by all sessions to it and by no other vCenter.
type SessionCache struct {
	opts SessionOptions
	cas  *caSource

	mu       sync.Mutex
	sessions map[string]*sessionEntry // by sessionKey
	current  map[string]string        // server|user -> sessionKey in use, to retire rotated credentials
	breakers map[string]*breaker      // by vcenterKey
}

type sessionEntry struct {
	ready  chan struct{}
	client *client
	err    error
}

var _ Sessions = (*SessionCache)(nil)

// NewSessions returns an empty session cache.
func NewSessions(opts SessionOptions) *SessionCache {
	opts.defaults()
	return &SessionCache{opts: opts, cas: &caSource{file: opts.ExtraCAFile},
		sessions: map[string]*sessionEntry{}, current: map[string]string{}, breakers: map[string]*breaker{}}
}

// breakerFor returns the circuit breaker of a vCenter endpoint, created on first use.
func (s *SessionCache) breakerFor(vcenter string) *breaker {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.breakers[vcenter]
	if !ok {
		b = newBreaker(vcenter, s.opts.Breaker, s.opts.Clock)
		s.breakers[vcenter] = b
	}
	return b
}

// BreakerState returns the state of the circuit breaker of the vCenter that server names (Closed for a
// vCenter never contacted or an invalid value).
func (s *SessionCache) BreakerState(server string) BreakerState {
	u, err := serverURL(server)
	if err != nil {
		return BreakerClosed
	}
	s.mu.Lock()
	b, ok := s.breakers[vcenterKey(u)]
	s.mu.Unlock()
	if !ok {
		return BreakerClosed
	}
	return b.State()
}

// sessionKey identifies a session without holding the secret: server, user and a hash of everything
// else that changes how we log in.
func sessionKey(c Credentials) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(c.Password), c.CABundle, []byte(normalizeThumbprint(c.Thumbprint)),
		[]byte(fmt.Sprint(c.Insecure))} {
		_, _ = fmt.Fprintf(h, "%d:", len(part)) // a hash.Hash never returns a write error
		h.Write(part)
	}
	return identityKey(c) + "|" + hex.EncodeToString(h.Sum(nil))
}

func identityKey(c Credentials) string { return strings.ToLower(c.Server) + "|" + c.Username }

// Get returns the cached client for creds, logging in on first use. Concurrent first uses share one
// login, which runs on none of the callers' contexts (one caller giving up does not fail the others)
// and is bounded by LoginTimeout; each caller returns when the login ends or its own ctx does.
func (s *SessionCache) Get(ctx context.Context, creds Credentials) (Client, error) {
	key := sessionKey(creds)
	s.mu.Lock()
	e, ok := s.sessions[key]
	if !ok {
		e = &sessionEntry{ready: make(chan struct{})}
		s.sessions[key] = e
		s.mu.Unlock()
		go s.login(context.WithoutCancel(ctx), key, creds, e)
	} else {
		s.mu.Unlock()
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		return nil, classify("Login", ctx.Err())
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.client, nil
}

// login runs one shared login for entry e and publishes its result.
func (s *SessionCache) login(ctx context.Context, key string, creds Credentials, e *sessionEntry) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.LoginTimeout)
	defer cancel()
	e.client, e.err = s.newClient(ctx, creds)
	s.mu.Lock()
	var retired []*client
	if e.err != nil {
		delete(s.sessions, key)
	} else {
		retired = s.retireLocked(creds, key)
	}
	s.mu.Unlock()
	close(e.ready)
	for _, old := range retired {
		// Rotated credentials logged in: the old session is not needed any more.
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.LoginTimeout)
			defer cancel()
			old.logout(ctx)
		}()
	}
}

// retireLocked forgets the sessions of the same server and user logged in with other credentials.
func (s *SessionCache) retireLocked(creds Credentials, key string) []*client {
	id := identityKey(creds)
	prev, ok := s.current[id]
	s.current[id] = key
	if !ok || prev == key {
		return nil
	}
	e := s.sessions[prev]
	delete(s.sessions, prev)
	if e == nil {
		return nil
	}
	select {
	case <-e.ready:
		if e.client != nil {
			return []*client{e.client}
		}
	default:
	}
	return nil
}

// Close logs every session out and empties the cache.
func (s *SessionCache) Close(ctx context.Context) {
	s.mu.Lock()
	entries := s.sessions
	s.sessions = map[string]*sessionEntry{}
	s.current = map[string]string{}
	s.mu.Unlock()
	for _, e := range entries {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return
		}
		if e.client != nil {
			e.client.logout(ctx)
		}
	}
}

// newClient logs in and returns a client whose transport re-logs in on NotAuthenticated and keeps the
// session alive while idle.
func (s *SessionCache) newClient(ctx context.Context, creds Credentials) (*client, error) {
	u, err := serverURL(creds.Server)
	if err != nil {
		return nil, err
	}
	sc, err := s.newSOAPClient(creds, u, s.breakerFor(vcenterKey(u)))
	if err != nil {
		return nil, err
	}
	opts := s.opts
	vc, err := vim25.NewClient(ctx, sc)
	if err != nil {
		return nil, classify("RetrieveServiceContent", err)
	}
	inner := timedRoundTripper(sc)
	if opts.WrapRoundTripper != nil {
		inner = opts.WrapRoundTripper(inner)
	}
	keep := keepalive.NewHandlerSOAP(inner, opts.KeepAlive, nil)
	c := &client{
		vim:       vc,
		soap:      sc,
		creds:     creds,
		log:       opts.Logger.WithValues("server", sc.URL().Host, "user", creds.Username),
		keep:      keep,
		pollBase:  opts.TaskPollInterval,
		timeouts:  opts,
		dcs:       map[string]*dcCache{},
		taskTimes: map[string]time.Duration{},
		tagIDs:    map[string]string{},
	}
	c.sessions = session.NewManager(vc)
	c.relogin = &reloginRoundTripper{next: keep, login: c.login, timeout: opts.LoginTimeout}
	vc.RoundTripper = c.relogin
	if err := c.login(ctx); err != nil {
		keep.Stop()
		return nil, err
	}
	return c, nil
}
