package main

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/vmware/govmomi/vim25/soap"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// apiWrites counts the operator's API writes (every request that is not a GET: create, update,
// patch, delete; list and watch are GETs) and, while recording, which objects they touched.
type apiWrites struct {
	total atomic.Int64
	// conflicts and throttled count writes refused with 409 and requests refused with 429.
	conflicts, throttled atomic.Int64

	mu        sync.Mutex
	recording map[string]int // "PATCH /apis/.../namespaces/ns/vsphereagents/x/status" -> count
	// reads counts, while recording, the operator's live reads (GETs and LISTs that are not watches:
	// what it asks the API server instead of its informer cache), by target.
	reads map[string]int
	// eventReasons counts, while recording, the Events created by reason.
	eventReasons map[string]int
}

// wrap is a rest.Config WrapTransport: every transport built from the config counts into c.
func (c *apiWrites) wrap(next http.RoundTripper) http.RoundTripper {
	return countingTransport{next: next, c: c}
}

type countingTransport struct {
	next http.RoundTripper
	c    *apiWrites
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.count(req)
	res, err := t.next.RoundTrip(req)
	if err == nil {
		switch res.StatusCode {
		case http.StatusConflict:
			t.c.conflicts.Add(1)
		case http.StatusTooManyRequests:
			t.c.throttled.Add(1)
		}
	}
	return res, err
}

func (c *apiWrites) count(req *http.Request) {
	if req.Method == http.MethodGet {
		if req.URL.Query().Get("watch") != "true" {
			c.mu.Lock()
			if c.reads != nil {
				c.reads["GET "+req.URL.Path]++
			}
			c.mu.Unlock()
		}
		return
	}
	c.total.Add(1)
	reason := ""
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/events") {
		reason = eventReason(req)
	}
	c.mu.Lock()
	if c.recording != nil {
		c.recording[req.Method+" "+req.URL.Path]++
		if reason != "" {
			c.eventReasons[reason]++
		}
	}
	c.mu.Unlock()
}

// eventReason is the reason of an Event a request creates ("?" when its body cannot be read again).
func eventReason(req *http.Request) string {
	if req.GetBody == nil {
		return "?"
	}
	body, err := req.GetBody()
	if err != nil {
		return "?"
	}
	defer func() { _ = body.Close() }()
	raw, err := io.ReadAll(body)
	if err != nil {
		return "?"
	}
	// JSON or protobuf (client-go's events clients send protobuf): the universal deserializer reads both.
	obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return "?"
	}
	switch e := obj.(type) {
	case *eventsv1.Event:
		return e.Reason
	case *corev1.Event:
		return e.Reason
	}
	return "?"
}

// record starts recording write targets; stop returns them, most frequent first.
func (c *apiWrites) record() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recording, c.reads, c.eventReasons = map[string]int{}, map[string]int{}, map[string]int{}
}

// events returns the Events created since record, by reason, most frequent first.
func (c *apiWrites) events() []target {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedTargets(c.eventReasons)
}

func (c *apiWrites) stop() []target {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := sortedTargets(c.recording)
	c.recording = nil
	return out
}

// liveReads returns the live reads recorded since record, most frequent first.
func (c *apiWrites) liveReads() []target {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedTargets(c.reads)
}

func sortedTargets(m map[string]int) []target {
	out := make([]target, 0, len(m))
	for k, n := range m {
		out = append(out, target{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || (out[i].n == out[j].n && out[i].what < out[j].what) })
	return out
}

type target struct {
	what string
	n    int
}

// kindOf reduces a write target to "METHOD resource[/subresource]" for a per-kind breakdown.
var pathRE = regexp.MustCompile(`^(\S+) /(?:api/v1|apis/[^/]+/[^/]+)(?:/namespaces/[^/]+)?/([^/]+)(?:/[^/]+)?(/[^/]+)?$`)

func kindOf(what string) string {
	if m := pathRE.FindStringSubmatch(what); m != nil {
		return m[1] + " " + m[2] + m[3]
	}
	return what
}

// soapCalls counts SOAP round trips of the operator's vSphere sessions, in total and by method.
type soapCalls struct {
	soap.RoundTripper
	n        *atomic.Int64
	byMethod *methodCounts
	bySite   *methodCounts // by method and call site (callSite)
}

func (c soapCalls) RoundTrip(ctx context.Context, req, res soap.HasFault) error {
	c.n.Add(1)
	method := strings.TrimSuffix(strings.TrimPrefix(reflect.TypeOf(req).String(), "*methods."), "Body")
	c.byMethod.add(method)
	if c.bySite != nil {
		c.bySite.add(method + " " + callSite())
	}
	return c.RoundTripper.RoundTrip(ctx, req, res)
}

// callSite names who made a SOAP call: the vSphere client's exported method (the operation) and the
// operator's function that called it, e.g. "via LookupVMs from vsphereagent.(*Reconciler).observeVMs".
// It tells which operation's calls to cut when the calls per VM are over budget.
func callSite() string {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	const module = "github.com/containeroo/agent-forge-operator/"
	op, from := "?", "?"
	for {
		f, more := frames.Next()
		name, ok := strings.CutPrefix(f.Function, module)
		if ok {
			if rest, isClient := strings.CutPrefix(name, "internal/vsphere.(*client)."); isClient && rest != "" && unicode.IsUpper(rune(rest[0])) {
				op = strings.SplitN(rest, ".", 2)[0]
			} else if strings.HasPrefix(name, "controllers/") {
				from = strings.TrimPrefix(name, "controllers/")
				break
			}
		}
		if !more {
			break
		}
	}
	return "via " + op + " from " + from
}

// methodCounts counts calls by SOAP method; snapshot and since give the calls of a window.
type methodCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methodCounts) add(method string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[method]++
}

func (m *methodCounts) snapshot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.n))
	for k, v := range m.n {
		out[k] = v
	}
	return out
}

// since returns the calls made after before (a snapshot), most frequent first.
func (m *methodCounts) since(before map[string]int) []target {
	var out []target
	for k, v := range m.snapshot() {
		if d := v - before[k]; d > 0 {
			out = append(out, target{k, d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || (out[i].n == out[j].n && out[i].what < out[j].what) })
	return out
}
