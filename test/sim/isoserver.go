package sim

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ISOMode switches how the ISO server answers.
type ISOMode int

const (
	// ISOServe serves the image (200, or 206/304 for range and conditional requests).
	ISOServe ISOMode = iota
	// ISONotFound answers 404, like an image service after the InfraEnv was deleted.
	ISONotFound
	// ISOServerError answers 500.
	ISOServerError
	// ISOSlow serves the image, pausing SlowDelay after every chunk.
	ISOSlow
	// ISOTruncated announces the full Content-Length, sends half the body and drops the connection.
	ISOTruncated
)

// ISOValidators is the Last-Modified behaviour of the server. openshift/assisted-image-service
// streams the image through net/http's ServeContent: HEAD gets Content-Length and Last-Modified
// without a body, Range and If-Modified-Since are honoured, no ETag is sent, and Last-Modified is the
// Last-Modified assisted-service gives for the InfraEnv's discovery ignition (older releases, or an
// unparsable value: the time of the request).
type ISOValidators int

const (
	// ISOLastModifiedImage sends the time the image was generated (SetContent moves it; RotateToken
	// does not): If-Modified-Since is answered 304 until the image changes.
	ISOLastModifiedImage ISOValidators = iota
	// ISOLastModifiedPerRequest sends the time of each request, like older image services: it never
	// validates anything.
	ISOLastModifiedPerRequest
	// ISONoLastModified sends no Last-Modified.
	ISONoLastModified
)

const (
	isoChunk = 64 << 10
	// isoMinSize holds the system area, the primary volume descriptor and the set terminator.
	isoMinSize = 36864
	// ISOMagicOffset is where "CD001" starts in an ISO 9660 image (sector 16, after the type byte).
	ISOMagicOffset = 32769
)

// ISOServerOptions configure NewISOServer. Zero values get the defaults noted.
type ISOServerOptions struct {
	// Seed and Size define the content deterministically (Size default 1 MiB, at least 36 KiB).
	Seed uint64
	Size int64
	// Token is the api_key the server demands (default: random).
	Token string
	// Validators selects the Last-Modified the server sends. The default is what
	// openshift/assisted-image-service sends today: the image's generation time, no ETag.
	Validators ISOValidators
	// ETag adds a strong ETag (and honours If-None-Match), like a generic web server; the real image
	// service never sends one.
	ETag bool
	// LastModified is kept for existing callers: Last-Modified is on unless Validators says otherwise.
	LastModified bool
	// TLS serves HTTPS with httptest's self-signed certificate (see CertificatePEM).
	TLS bool
	// TLSConfig serves HTTPS with this configuration instead (its certificate, e.g. signed by a
	// PrivateCA, its minimum version); it implies TLS.
	TLSConfig *tls.Config
	// SlowDelay is the pause per 64 KiB chunk in ISOSlow mode (default 50ms).
	SlowDelay time.Duration
}

// ISOServer is a loopback discovery-image service. It serves a generated ISO 9660-looking image
// at /images/<id>?api_key=<token>&arch=x86_64&type=minimal-iso, rejects a wrong or missing token
// with 401, and counts requests. Safe for concurrent use.
type ISOServer struct {
	srv *httptest.Server

	mu           sync.Mutex
	opts         ISOServerOptions
	mode         ISOMode
	generation   int
	modified     time.Time
	sha          string // cached hex SHA-256 of the current content
	requests     atomic.Int64
	downloads    atomic.Int64
	heads        atomic.Int64
	unauthorized atomic.Int64
	bytesServed  atomic.Int64
	// Transport counters: what reached the handler over TLS or not, and the handshakes around it.
	tlsDownloads    atomic.Int64
	plainRequests   atomic.Int64
	handshakes      atomic.Int64
	conns           sync.Map // net.Conn -> true: TLS connections already counted in handshakes
	handshakeErrors atomic.Int64
	minTLSVersion   atomic.Uint32
	// history holds the SHA-256 of the images SetContent replaced, oldest first (see Generated).
	history []string
}

// NewISOServer starts a server on 127.0.0.1. Close it when done.
func NewISOServer(opts ISOServerOptions) *ISOServer {
	if opts.Size == 0 {
		opts.Size = 1 << 20
	}
	if opts.Size < isoMinSize {
		opts.Size = isoMinSize
	}
	if opts.Token == "" {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
		opts.Token = hex.EncodeToString(b[:])
	}
	if opts.SlowDelay == 0 {
		opts.SlowDelay = 50 * time.Millisecond
	}
	s := &ISOServer{opts: opts, modified: generatedAt(time.Time{})}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	switch {
	case opts.TLSConfig != nil:
		s.opts.TLS = true
		s.srv.TLS = opts.TLSConfig.Clone()
		s.srv.Config.ConnState = s.countHandshakes
		// net/http logs every failed handshake (an untrusted certificate, plain HTTP on this port).
		s.srv.Config.ErrorLog = log.New(handshakeErrorCounter{s}, "", 0)
		s.srv.StartTLS()
	case opts.TLS:
		s.srv.StartTLS()
	default:
		s.srv.Start()
	}
	registerImageServer(s)
	return s
}

// countHandshakes counts each TLS connection once, when it carries its first request: the handshake
// completed and the client accepted the certificate (a client that rejects it never sends one).
func (s *ISOServer) countHandshakes(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateActive:
		if _, seen := s.conns.LoadOrStore(c, true); !seen {
			s.handshakes.Add(1)
		}
	case http.StateClosed, http.StateHijacked:
		s.conns.Delete(c)
	}
}

// handshakeErrorCounter counts net/http's "TLS handshake error" log lines and drops all output.
type handshakeErrorCounter struct{ s *ISOServer }

func (c handshakeErrorCounter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "TLS handshake error") {
		c.s.handshakeErrors.Add(1)
	}
	return len(p), nil
}

// Close stops the server and closes open connections.
func (s *ISOServer) Close() {
	unregisterImageServer(s)
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the download URL including the secret api_key, as in InfraEnv status.isoDownloadURL.
func (s *ISOServer) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := url.Values{"api_key": {s.opts.Token}, "arch": {"x86_64"}, "type": {"minimal-iso"}, "version": {"4.20"}}
	return s.srv.URL + s.path() + "?" + q.Encode()
}

// BaseURL is the URL without any query (no secret).
func (s *ISOServer) BaseURL() string { return s.srv.URL + s.path() }

// Token returns the api_key currently accepted.
func (s *ISOServer) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Token
}

// RotateToken makes the server accept only a new api_key (as when an InfraEnv URL expires) and
// returns the new URL.
func (s *ISOServer) RotateToken(token string) string {
	s.mu.Lock()
	s.opts.Token = token
	s.mu.Unlock()
	return s.URL()
}

// HTTPClient returns a client that trusts the server (useful with TLS).
func (s *ISOServer) HTTPClient() *http.Client { return s.srv.Client() }

// CertificatePEM returns the server certificate in PEM (nil without TLS).
func (s *ISOServer) CertificatePEM() []byte {
	if !s.opts.TLS {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// Certificate returns the server certificate (nil without TLS).
func (s *ISOServer) Certificate() *x509.Certificate {
	if !s.opts.TLS {
		return nil
	}
	return s.srv.Certificate()
}

func (s *ISOServer) path() string { return "/images/3f1c2a9e-infraenv" }

// SetMode switches how the server answers from the next request on.
func (s *ISOServer) SetMode(m ISOMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// SetContent replaces the image (as when the InfraEnv is regenerated); validators change with it.
func (s *ISOServer) SetContent(seed uint64, size int64) {
	if size < isoMinSize {
		size = isoMinSize
	}
	previous := s.SHA256() // the image service keeps knowing the image it replaces
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, previous)
	s.opts.Seed, s.opts.Size = seed, size
	s.generation++
	s.sha = ""
	s.modified = generatedAt(s.modified)
}

// generatedAt is a new image's generation time: a little in the past (assisted-service generates
// the image before it publishes the URL) and, Last-Modified having one-second resolution, at least a
// second after the previous one so that If-Modified-Since sees the change.
func generatedAt(previous time.Time) time.Time {
	next := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	if !next.After(previous) {
		next = previous.Add(time.Second)
	}
	return next
}

// Size is the current image size in bytes.
func (s *ISOServer) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Size
}

// SHA256 is the hex SHA-256 of the current image.
func (s *ISOServer) SHA256() string {
	s.mu.Lock()
	seed, size, cached := s.opts.Seed, s.opts.Size, s.sha
	s.mu.Unlock()
	if cached != "" {
		return cached
	}
	h := sha256.New()
	_, _ = io.Copy(h, io.NewSectionReader(&isoImage{seed: seed, size: size}, 0, size))
	sum := hex.EncodeToString(h.Sum(nil))
	s.mu.Lock()
	if s.opts.Seed == seed && s.opts.Size == size {
		s.sha = sum
	}
	s.mu.Unlock()
	return sum
}

// Content returns the current image bytes (for small images in tests).
func (s *ISOServer) Content() []byte {
	s.mu.Lock()
	img := &isoImage{seed: s.opts.Seed, size: s.opts.Size}
	s.mu.Unlock()
	b := make([]byte, img.size)
	_, _ = img.ReadAt(b, 0)
	return b
}

// Requests counts every request (any method, any answer).
func (s *ISOServer) Requests() int64 { return s.requests.Load() }

// Downloads counts GET requests answered with the body (200 or 206); a HEAD is no download.
func (s *ISOServer) Downloads() int64 { return s.downloads.Load() }

// Heads counts HEAD requests (any answer).
func (s *ISOServer) Heads() int64 { return s.heads.Load() }

// Unauthorized counts requests rejected for a missing or wrong api_key.
func (s *ISOServer) Unauthorized() int64 { return s.unauthorized.Load() }

// BytesServed counts body bytes written.
func (s *ISOServer) BytesServed() int64 { return s.bytesServed.Load() }

// TLSDownloads counts the Downloads whose request came over TLS.
func (s *ISOServer) TLSDownloads() int64 { return s.tlsDownloads.Load() }

// PlainRequests counts requests that reached the handler without TLS (any method, any answer).
func (s *ISOServer) PlainRequests() int64 { return s.plainRequests.Load() }

// TLSHandshakes counts TLS connections with TLSConfig that carried a request (0 otherwise).
func (s *ISOServer) TLSHandshakes() int64 { return s.handshakes.Load() }

// TLSHandshakeErrors counts failed handshakes with TLSConfig: a client that does not trust the
// certificate, one that speaks plain HTTP to this port, one that hangs up mid-handshake.
func (s *ISOServer) TLSHandshakeErrors() int64 { return s.handshakeErrors.Load() }

// MinTLSVersion is the lowest TLS version of a request that reached the handler (0: none over TLS);
// compare with tls.VersionTLS12 and friends.
func (s *ISOServer) MinTLSVersion() uint16 { return uint16(s.minTLSVersion.Load()) }

// countTransport records how a request reached the handler.
func (s *ISOServer) countTransport(r *http.Request) {
	if r.TLS == nil {
		s.plainRequests.Add(1)
		return
	}
	v := uint32(r.TLS.Version)
	for {
		cur := s.minTLSVersion.Load()
		if (cur != 0 && cur <= v) || s.minTLSVersion.CompareAndSwap(cur, v) {
			return
		}
	}
}

// countDownload records a GET answered with the body.
func (s *ISOServer) countDownload(r *http.Request) {
	s.downloads.Add(1)
	if r.TLS != nil {
		s.tlsDownloads.Add(1)
	}
}

func (s *ISOServer) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.countTransport(r)
	if r.Method == http.MethodHead {
		s.heads.Add(1)
	}
	s.mu.Lock()
	opts, mode, gen, modified := s.opts, s.mode, s.generation, s.modified
	s.mu.Unlock()

	if r.URL.Path != s.path() {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("api_key") != opts.Token {
		s.unauthorized.Add(1)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	switch mode {
	case ISONotFound:
		http.NotFound(w, r)
		return
	case ISOServerError:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	img := &isoImage{seed: opts.Seed, size: opts.Size}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="discovery.iso"`)
	if opts.ETag {
		w.Header().Set("ETag", fmt.Sprintf(`"%x-%x-%d"`, opts.Seed, opts.Size, gen))
	}
	if mode == ISOTruncated {
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", fmt.Sprint(opts.Size))
			return
		}
		s.countDownload(r)
		w.Header().Set("Content-Length", fmt.Sprint(opts.Size))
		w.WriteHeader(http.StatusOK)
		n, _ := io.Copy(w, io.NewSectionReader(img, 0, opts.Size/2))
		s.bytesServed.Add(n)
		// Returning short of Content-Length makes net/http drop the connection: the client sees
		// an unexpected EOF.
		return
	}
	var lastMod time.Time // zero: ServeContent sends no Last-Modified and ignores If-Modified-Since
	switch opts.Validators {
	case ISOLastModifiedImage:
		lastMod = modified
	case ISOLastModifiedPerRequest:
		lastMod = time.Now()
	}
	var body io.ReadSeeker = io.NewSectionReader(img, 0, opts.Size)
	out := io.Writer(w)
	if mode == ISOSlow {
		out = &slowWriter{w: w, delay: opts.SlowDelay, done: r.Context().Done()}
	}
	cw := &countingWriter{ResponseWriter: w, out: out, s: s, r: r}
	http.ServeContent(cw, r, "discovery.iso", lastMod, body)
}

// countingWriter counts body bytes and successful downloads while ServeContent writes.
type countingWriter struct {
	http.ResponseWriter
	out         io.Writer
	s           *ISOServer
	r           *http.Request
	wroteHeader bool
}

func (c *countingWriter) WriteHeader(code int) {
	if c.wroteHeader {
		return
	}
	c.wroteHeader = true
	if c.r.Method == http.MethodGet && (code == http.StatusOK || code == http.StatusPartialContent) {
		c.s.countDownload(c.r)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	n, err := c.out.Write(p)
	c.s.bytesServed.Add(int64(n))
	return n, err
}

// slowWriter pauses after every chunk, stopping early when the request is cancelled.
type slowWriter struct {
	w     http.ResponseWriter
	delay time.Duration
	done  <-chan struct{}
}

func (s *slowWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), isoChunk)
		m, err := s.w.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		if f, ok := s.w.(http.Flusher); ok {
			f.Flush()
		}
		p = p[n:]
		t := time.NewTimer(s.delay)
		select {
		case <-s.done:
			t.Stop()
			return written, http.ErrAbortHandler
		case <-t.C:
		}
	}
	return written, nil
}

// isoImage generates the image on the fly: pseudo-random bytes from (seed, chunk index), with an
// ISO 9660 primary volume descriptor at sector 16 and a set terminator at sector 17, so it passes
// an "is this an ISO" check and two seeds never share content.
type isoImage struct {
	seed uint64
	size int64
}

func (img *isoImage) ReadAt(p []byte, off int64) (int, error) {
	if off >= img.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < img.size {
		chunk := off / isoChunk
		within := off % isoChunk
		buf := img.chunk(chunk)
		c := copy(p[n:], buf[within:])
		if rest := img.size - off; int64(c) > rest {
			c = int(rest)
		}
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (img *isoImage) chunk(i int64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[0:], img.seed)
	binary.LittleEndian.PutUint64(key[8:], uint64(i))
	copy(key[16:], "agent-forge-iso!")
	buf := make([]byte, isoChunk)
	_, _ = rand.NewChaCha8(key).Read(buf)
	if i == 0 {
		// System area (sectors 0-15) is zero in real images.
		clear(buf[:32768])
		pvd := buf[32768:34816]
		clear(pvd)
		pvd[0] = 1
		copy(pvd[1:], "CD001")
		pvd[6] = 1
		copy(pvd[8:40], fmt.Sprintf("%-32s", "LINUX"))
		copy(pvd[40:72], fmt.Sprintf("%-32s", fmt.Sprintf("rhcos-%016x", img.seed)))
		term := buf[34816:36864]
		clear(term)
		term[0] = 255
		copy(term[1:], "CD001")
		term[6] = 1
	}
	return buf
}
