package iso

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// memDatastore is an in-memory stand-in for the datastore side of vsphere.Client, for fast unit
// tests of the refresh logic. Integration tests run the same scenarios on the govmomi simulator.
type memDatastore struct {
	vsphere.Client // unimplemented VM methods panic if called
	mu             sync.Mutex
	files          map[string][]byte
	modified       map[string]time.Time
	attached       map[string][]string // iso path -> VM names
	deleteFailures int                 // fail this many DeleteFile calls
	uploads        int
	moves          int
	now            func() time.Time
}

func newMemDatastore() *memDatastore {
	return &memDatastore{files: map[string][]byte{}, modified: map[string]time.Time{}, attached: map[string][]string{}, now: time.Now}
}

func (m *memDatastore) UploadISO(_ context.Context, _, finalPath string, r io.Reader, size int64) error {
	var buf bytes.Buffer
	n, err := io.Copy(&buf, r)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("upload: %d of %d bytes", n, size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uploads++
	m.files[finalPath] = buf.Bytes()
	m.modified[finalPath] = m.now()
	return nil
}

// UploadFile writes exactly finalPath (the in-memory datastore has no partial files to hide).
func (m *memDatastore) UploadFile(ctx context.Context, dc, p string, r io.Reader, size int64) error {
	return m.UploadISO(ctx, dc, p, r, size)
}

func (m *memDatastore) MoveFile(_ context.Context, _, src, dst string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moves++
	b, ok := m.files[src]
	if !ok {
		return vsphere.NewError(vsphere.ClassNotFound, "MoveFile", "%s not found", src)
	}
	delete(m.files, src)
	m.files[dst] = b
	m.modified[dst] = m.modified[src]
	return nil
}

func (m *memDatastore) StatFile(_ context.Context, _, p string) (*vsphere.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[p]
	if !ok {
		return nil, vsphere.NewError(vsphere.ClassNotFound, "StatFile", "%s not found", p)
	}
	return &vsphere.FileInfo{Path: p, Name: path.Base(p), SizeBytes: int64(len(b)), Modified: m.modified[p]}, nil
}

func (m *memDatastore) ListFiles(_ context.Context, _, dir string) ([]vsphere.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []vsphere.FileInfo
	for p, b := range m.files {
		if d, f := path.Split(p); strings.TrimSuffix(d, "/") == dir {
			out = append(out, vsphere.FileInfo{Path: p, Name: f, SizeBytes: int64(len(b)), Modified: m.modified[p]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (m *memDatastore) DeleteFile(_ context.Context, _, p string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleteFailures > 0 {
		m.deleteFailures--
		return vsphere.NewError(vsphere.ClassFault, "DeleteFile", "injected failure deleting %s", p)
	}
	delete(m.files, p)
	return nil
}

func (m *memDatastore) VMsWithISO(_ context.Context, _, p string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.attached[p]...), nil
}

// isoServer serves generated ISO bytes on loopback with ETag/Last-Modified validation and
// injectable failures.
type isoServer struct {
	*httptest.Server
	mu       sync.Mutex
	content  []byte
	modified time.Time
	mode     string // "", "404", "500", "slow", "truncate", "chunked", "noValidators", "ignoreValidators", "bogus304"
	// validators: "" (ETag and Last-Modified, a generic web server), "imageService" (like
	// assisted-image-service: no ETag, Last-Modified = the image's generation time) or
	// "perRequest" (older image services: no ETag, Last-Modified = the time of the request).
	validators string
	refuseHEAD bool // answer HEAD with 405
	requests   int
	condReqs   int
	heads      int
	bodies     int   // GETs answered with (part of) the image
	bodyBytes  int64 // image bytes written
	release    chan struct{}
	closeOnce  sync.Once
}

// counters returns (GETs answered with a body, image bytes written, HEADs).
func (s *isoServer) counters() (int, int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies, s.bodyBytes, s.heads
}

func (s *isoServer) setValidators(v string, refuseHEAD bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validators, s.refuseHEAD = v, refuseHEAD
}

// countingResponse counts GET bodies and their bytes.
type countingResponse struct {
	http.ResponseWriter
	s    *isoServer
	get  bool
	seen bool
}

func (c *countingResponse) WriteHeader(code int) {
	if !c.seen && c.get && (code == http.StatusOK || code == http.StatusPartialContent) {
		c.s.mu.Lock()
		c.s.bodies++
		c.s.mu.Unlock()
	}
	c.seen = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingResponse) Write(p []byte) (int, error) {
	if !c.seen {
		c.WriteHeader(http.StatusOK)
	}
	n, err := c.ResponseWriter.Write(p)
	c.s.mu.Lock()
	c.s.bodyBytes += int64(n)
	c.s.mu.Unlock()
	return n, err
}

func (c *countingResponse) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

func newISOServer(t *testing.T, content []byte) *isoServer {
	s := &isoServer{content: content, modified: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.closeOnce.Do(func() { close(s.release) })
		s.Close()
	})
	return s
}

func (s *isoServer) set(content []byte, mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if content != nil {
		s.content = content
		s.modified = s.modified.Add(time.Hour)
	}
	s.mode = mode
}

func (s *isoServer) url(token string) string {
	return s.URL + "/images/infraenv/minimal.iso?arch=x86_64&api_key=" + token
}

func (s *isoServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	content, modified, mode, validators, refuseHEAD := s.content, s.modified, s.mode, s.validators, s.refuseHEAD
	s.requests++
	if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
		s.condReqs++
	}
	if r.Method == http.MethodHead {
		s.heads++
	}
	s.mu.Unlock()
	if r.Method == http.MethodHead && refuseHEAD {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w = &countingResponse{ResponseWriter: w, s: s, get: r.Method == http.MethodGet}
	switch mode {
	case "404":
		http.Error(w, "no such image", http.StatusNotFound)
		return
	case "500":
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	case "bogus304":
		w.WriteHeader(http.StatusNotModified)
		return
	case "slow":
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		_, _ = w.Write(content[:64<<10])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	case "chunked":
		// No Content-Length: net/http sends the body chunked once the handler flushes early.
		for off := 0; off < len(content); off += 32 << 10 {
			_, _ = w.Write(content[off:min(off+32<<10, len(content))])
			w.(http.Flusher).Flush()
		}
		return
	case "truncate":
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		_, _ = w.Write(content[:len(content)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drops the connection mid-body
	}
	switch {
	case validators == "perRequest":
		modified = time.Now()
	case validators == "imageService":
	case mode != "noValidators":
		w.Header().Set("ETag", fmt.Sprintf(`"%s"`, sha(content)[:16]))
	}
	if mode == "ignoreValidators" || mode == "noValidators" {
		r.Header.Del("If-None-Match")
		r.Header.Del("If-Modified-Since")
		modified = time.Time{}
	}
	http.ServeContent(w, r, "minimal.iso", modified, bytes.NewReader(content))
}
