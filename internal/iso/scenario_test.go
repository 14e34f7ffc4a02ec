package iso

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	afv1 "github.com/containeroo/agent-forge-operator/api/v1alpha1"
	"github.com/containeroo/agent-forge-operator/internal/vsphere"
)

// backend is the vSphere side of a scenario: the in-memory double or the govmomi simulator.
type backend struct {
	client     vsphere.Client
	datacenter string
	datastore  string
	// namespace isolates scenarios sharing one datastore (default "ns").
	namespace string
	// attach creates a VM with isoPath on its CD-ROM and returns a func removing that VM.
	attach func(t *testing.T, isoPath string) (remove func())
	// failDeletes makes the next n datastore file deletions fail.
	failDeletes func(t *testing.T, n int)
	// put writes a file directly (to plant leftovers), with a modification time when supported.
	put func(t *testing.T, path string, content []byte, modified time.Time)
	// read returns a file's bytes, or ok=false.
	read func(t *testing.T, path string) ([]byte, bool)
	// list returns the file names under "[ds] dir".
	list func(t *testing.T, dir string) []string
	// moves counts datastore file moves so far (the simulator's MoveDatastoreFile_Task calls);
	// uploads counts datastore uploads.
	moves, uploads func() int
}

func memBackend(_ *testing.T) backend {
	m := newMemDatastore()
	return backend{
		client: m, datacenter: "DC0", datastore: "LocalDS_0",
		attach: func(_ *testing.T, p string) func() {
			m.mu.Lock()
			m.attached[p] = append(m.attached[p], "vm-"+short(p))
			m.mu.Unlock()
			return func() { m.mu.Lock(); delete(m.attached, p); m.mu.Unlock() }
		},
		failDeletes: func(_ *testing.T, n int) { m.mu.Lock(); m.deleteFailures = n; m.mu.Unlock() },
		put: func(_ *testing.T, p string, b []byte, mod time.Time) {
			m.mu.Lock()
			m.files[p], m.modified[p] = b, mod
			m.mu.Unlock()
		},
		read: func(_ *testing.T, p string) ([]byte, bool) {
			m.mu.Lock()
			defer m.mu.Unlock()
			b, ok := m.files[p]
			return b, ok
		},
		moves:   func() int { m.mu.Lock(); defer m.mu.Unlock(); return m.moves },
		uploads: func() int { m.mu.Lock(); defer m.mu.Unlock(); return m.uploads },
		list: func(_ *testing.T, dir string) []string {
			files, _ := m.ListFiles(context.Background(), "", dir)
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			return names
		},
	}
}

// syncBuffer collects log lines from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness drives one pool through Decide → Refresh → Prune like the pool controller would, and
// keeps everything the operator would expose (status, condition, events, logs, errors) for the
// token-leak check.
type harness struct {
	t      *testing.T
	b      backend
	clock  *clocktesting.FakeClock
	cache  *Cache
	server *isoServer
	pool   *afv1.VsphereAgentPool
	token  string
	url    string
	// created is the InfraEnv's status.createdTime (the image's version).
	created metav1.Time
	logs    *syncBuffer
	events  []Event
	errs    []error
	cond    *metav1.Condition
	// maxSize is the requests' MaxSize (spec.iso.maxSize; 0: the default).
	maxSize int64
}

func newHarness(t *testing.T, b backend, content []byte) *harness {
	h := &harness{t: t, b: b, clock: clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second)),
		logs: &syncBuffer{}, token: testToken, created: metav1.NewTime(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))}
	log := funcr.New(func(prefix, args string) { _, _ = h.logs.Write([]byte(prefix + " " + args + "\n")) }, funcr.Options{Verbosity: 10})
	h.server = newISOServer(t, content)
	h.url = h.server.url(h.token)
	var err error
	h.cache, err = NewCache(Options{Clock: h.clock, HTTPClient: h.server.Client(), Log: log, IdleReadTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ns := b.namespace
	if ns == "" {
		ns = "ns"
	}
	h.pool = &afv1.VsphereAgentPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"}}
	h.pool.Spec.VSphere.Datacenter = b.datacenter
	h.pool.Spec.VSphere.ISODatastore = b.datastore
	h.pool.Spec.ISO.CheckInterval = &metav1.Duration{Duration: time.Hour}
	h.pool.Spec.ISO.RetainVersions = 1
	t.Cleanup(h.assertNoTokenLeak)
	return h
}

func (h *harness) source() Source {
	created := h.created
	return Source{URL: h.url, CreatedTime: &created}
}

func (h *harness) request(need RefreshNeed) RefreshRequest {
	st := afv1.ISOStatus{}
	if h.pool.Status.ISO != nil {
		st = *h.pool.Status.ISO
	}
	return RefreshRequest{Datacenter: h.b.datacenter, Datastore: h.b.datastore, Prefix: PathPrefix(h.pool),
		Source: h.source(), ForceToken: h.pool.Annotations[afv1.AnnotationForceISORefresh],
		Conditional: need.Conditional, Revalidate: need.Revalidate, Status: st, PreviousReady: h.cond, MaxSize: h.maxSize,
		AllowPlainHTTP: true} // the scenario image servers are plain HTTP; plainhttp_test.go covers the refusal
}

// pass runs Decide and, when needed, one refresh and one prune, applying the results.
func (h *harness) pass() (RefreshNeed, *RefreshResult) {
	h.t.Helper()
	ctx := context.Background()
	need := Decide(h.clock.Now(), h.pool, h.source())
	var rr *RefreshResult
	st := h.request(need).Status
	if need.Needed {
		moves, uploads := h.b.moves(), h.b.uploads()
		res, err := h.cache.Refresh(ctx, h.b.client, h.request(need))
		if err != nil {
			h.errs = append(h.errs, err)
		}
		h.expectMoves(res.Outcome, h.b.moves()-moves, h.b.uploads()-uploads)
		rr, st = &res, res.Status
		cond := res.Condition
		h.cond = &cond
		h.events = append(h.events, res.Events...)
	}
	pr := h.cache.Prune(ctx, h.b.client, PruneRequest{Datacenter: h.b.datacenter, Datastore: h.b.datastore,
		Prefix: PathPrefix(h.pool), RetainVersions: int(h.pool.Spec.ISO.RetainVersions), Status: st})
	h.events = append(h.events, pr.Events...)
	h.pool.Status.ISO = &pr.Status
	return need, rr
}

func (h *harness) status() afv1.ISOStatus { return *h.pool.Status.ISO }

// renewToken makes the InfraEnv publish the same image under a URL with another token.
func (h *harness) renewToken(token string) {
	h.token = token
	h.url = h.server.url(token)
}

// expectMoves checks one refresh's datastore traffic: new bytes are uploaded once to a temporary
// name and moved once to their content address; anything else moves nothing.
func (h *harness) expectMoves(outcome Outcome, moves, uploads int) {
	h.t.Helper()
	switch outcome {
	case OutcomeUploaded:
		if moves != 1 || uploads != 1 {
			h.t.Errorf("an upload took %d uploads and %d moves, want exactly 1 and 1", uploads, moves)
		}
	case OutcomeUnchanged:
		if moves != 0 || uploads != 0 {
			h.t.Errorf("an unchanged ISO took %d uploads and %d moves, want none", uploads, moves)
		}
	default:
		if moves != 0 {
			h.t.Errorf("outcome %s moved %d files, want none", outcome, moves)
		}
	}
}

func (h *harness) prefixDir() string {
	return "[" + h.b.datastore + "] " + PathPrefix(h.pool)
}

// files lists the names under the pool's prefix.
func (h *harness) files() []string { return h.b.list(h.t, h.prefixDir()) }

func (h *harness) eventReasons() []string {
	var r []string
	for _, e := range h.events {
		r = append(r, e.Reason)
	}
	return r
}

func (h *harness) assertNoTokenLeak() {
	st, _ := json.Marshal(h.pool.Status)
	ev, _ := json.Marshal(h.events)
	cond, _ := json.Marshal(h.cond)
	var errs []string
	for _, e := range h.errs {
		errs = append(errs, e.Error())
	}
	for name, s := range map[string]string{"status": string(st), "events": string(ev), "condition": string(cond),
		"logs": h.logs.String(), "errors": strings.Join(errs, "\n")} {
		for _, secret := range []string{h.token, "api_key"} {
			if strings.Contains(s, secret) {
				h.t.Errorf("%s leaks %q:\n%s", name, secret, s)
			}
		}
	}
}

func (h *harness) expectOutcome(rr *RefreshResult, want Outcome) {
	h.t.Helper()
	if rr == nil {
		h.t.Fatalf("no refresh ran, want %s", want)
	}
	if rr.Outcome != want {
		h.t.Fatalf("outcome %s (err %v), want %s", rr.Outcome, rr.Err, want)
	}
}

func (h *harness) expectOnly(names ...string) {
	h.t.Helper()
	got := h.files()
	if strings.Join(got, ",") != strings.Join(names, ",") {
		h.t.Fatalf("files under prefix: %v, want %v", got, names)
	}
}

// expectCached asserts the content-addressed files under the prefix (temporary leftovers ignored).
func (h *harness) expectCached(names ...string) {
	h.t.Helper()
	var got []string
	for _, n := range h.files() {
		if cachedName.MatchString(n) {
			got = append(got, n)
		} else if !tempName.MatchString(n) {
			h.t.Fatalf("unexpected file %s under the prefix", n)
		}
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		h.t.Fatalf("cached files: %v, want %v", got, names)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
