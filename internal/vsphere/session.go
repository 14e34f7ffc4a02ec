package vsphere

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/vmware/govmomi/session"
	"github.com/vmware/govmomi/session/keepalive"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/soap"
)

// SessionOptions tune a SessionCache. The zero value is usable.
type SessionOptions struct {
	Logger logr.Logger
	// KeepAlive is the idle interval between keep-alive calls of a session (default 5 minutes).
	KeepAlive time.Duration
	// WrapRoundTripper, when set, wraps every session's SOAP transport (below re-login and keep-alive),
	// e.g. a request counter in benchmarks and tests.
	WrapRoundTripper func(soap.RoundTripper) soap.RoundTripper
	// TaskPollInterval is the first delay before a task's state is read (default 5 ms, doubling up to 1 s).
	TaskPollInterval time.Duration
}

// SessionCache implements Sessions: one logged-in client per (server, user, credential hash), shared by
// every reconcile and pool. A session that expires is renewed transparently on the next call that vCenter
// rejects with NotAuthenticated; no liveness probe is sent before reuse (it would cost a round trip per use).
type SessionCache struct {
	opts SessionOptions

	mu       sync.Mutex
	sessions map[string]*sessionEntry // by sessionKey
	current  map[string]string        // server|user -> sessionKey in use, to retire rotated credentials
}

type sessionEntry struct {
	ready  chan struct{}
	client *client
	err    error
}

var _ Sessions = (*SessionCache)(nil)

// NewSessions returns an empty session cache.
func NewSessions(opts SessionOptions) *SessionCache {
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 5 * time.Minute
	}
	if opts.TaskPollInterval <= 0 {
		opts.TaskPollInterval = 5 * time.Millisecond
	}
	return &SessionCache{opts: opts, sessions: map[string]*sessionEntry{}, current: map[string]string{}}
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

// Get returns the cached client for creds, logging in on first use. Concurrent first uses share one login.
func (s *SessionCache) Get(ctx context.Context, creds Credentials) (Client, error) {
	key := sessionKey(creds)
	s.mu.Lock()
	e, ok := s.sessions[key]
	if !ok {
		e = &sessionEntry{ready: make(chan struct{})}
		s.sessions[key] = e
		s.mu.Unlock()
		e.client, e.err = newClient(ctx, creds, s.opts)
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
			go old.logout(context.WithoutCancel(ctx))
		}
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

// serverURL turns the Secret's server value ("vc.example.com", "vc:8443", "https://vc/sdk") into the SDK URL.
func serverURL(server string) (*url.URL, error) {
	if server == "" {
		return nil, NewError(ClassInvalid, "Login", "vCenter server is empty")
	}
	if !strings.Contains(server, "://") {
		server = "https://" + server
	}
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return nil, NewError(ClassInvalid, "Login", "vCenter server %q is not a host name or URL", server)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = vim25.Path
	}
	u.User = nil
	return u, nil
}

// normalizeThumbprint accepts "AB:CD:..", "abcd..", with or without colons, and returns govmomi's format.
func normalizeThumbprint(tp string) string {
	tp = strings.ToUpper(strings.NewReplacer(":", "", " ", "").Replace(strings.TrimSpace(tp)))
	if tp == "" {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(tp); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		end := min(i+2, len(tp))
		b.WriteString(tp[i:end])
	}
	return b.String()
}

// newSOAPClient builds the HTTP/SOAP client with TLS verification as the credentials ask: verified against
// the system roots plus an optional CA bundle, or pinned by a SHA-256 thumbprint; insecure only when set.
func newSOAPClient(creds Credentials) (*soap.Client, error) {
	u, err := serverURL(creds.Server)
	if err != nil {
		return nil, err
	}
	sc := soap.NewClient(u, creds.Insecure)
	if creds.Insecure {
		return sc, nil
	}
	if len(creds.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(creds.CABundle) {
			return nil, NewError(ClassInvalid, "Login", "caBundle holds no PEM certificate")
		}
		sc.DefaultTransport().TLSClientConfig.RootCAs = pool
	}
	if creds.Thumbprint != "" {
		tp := normalizeThumbprint(creds.Thumbprint)
		if len(tp) != 32*3-1 {
			return nil, NewError(ClassInvalid, "Login", "thumbprint must be a SHA-256 fingerprint (64 hex digits)")
		}
		sc.SetThumbprint(u.Host, tp)
	}
	return sc, nil
}

// newClient logs in and returns a client whose transport re-logs in on NotAuthenticated and keeps the
// session alive while idle.
func newClient(ctx context.Context, creds Credentials, opts SessionOptions) (*client, error) {
	sc, err := newSOAPClient(creds)
	if err != nil {
		return nil, err
	}
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
		dcs:       map[string]*dcCache{},
		taskTimes: map[string]time.Duration{},
		tagIDs:    map[string]string{},
	}
	c.sessions = session.NewManager(vc)
	c.relogin = &reloginRoundTripper{next: keep, login: c.login}
	vc.RoundTripper = c.relogin
	if err := c.login(ctx); err != nil {
		keep.Stop()
		return nil, err
	}
	return c, nil
}
